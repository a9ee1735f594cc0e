import CSQLite

extension Database {
    /// The body of a SQL function: its arguments in, its result out.
    public typealias Function = ([SQLiteValue]) throws -> SQLiteValue

    /// Registers the scalar SQL function `name` with `argumentCount` arguments (-1: any number)
    /// on this connection, replacing one registered before with the same name and count.
    ///
    /// An `SQLiteError` that `body` throws fails the statement with its extended code and
    /// message, as SQLite's own failure would (an SQLITE_IOERR in any statement, a SELECT too,
    /// rolls back the open transaction), so tests can inject a real SQLite failure at a chosen
    /// statement; any other error fails it with SQLITE_ERROR and the error's description.
    public func createFunction(_ name: String, argumentCount: Int32 = 0, _ body: @escaping Function) throws {
        let box = Unmanaged.passRetained(FunctionBox(body)).toOpaque()
        // SQLite calls the destructor (releasing the box) when the function is replaced or the
        // connection closes, and also when this registration fails.
        let rc = sqlite3_create_function_v2(
            handle, name, argumentCount, SQLITE_UTF8, box,
            { context, count, arguments in
                let box = Unmanaged<FunctionBox>.fromOpaque(sqlite3_user_data(context)!).takeUnretainedValue()
                let values = (0..<Int(count)).map { SQLiteValue(sqlite3Value: arguments![$0]) }
                do {
                    try box.body(values).setResult(of: context)
                } catch let error as SQLiteError {
                    sqlite3_result_error(context, error.message, -1)
                    sqlite3_result_error_code(context, error.extendedCode)
                } catch {
                    sqlite3_result_error(context, "\(error)", -1)
                }
            }, nil, nil,
            { box in Unmanaged<FunctionBox>.fromOpaque(box!).release() })
        try check(rc, sql: nil)
    }
}

/// A function's body, held by SQLite as the function's user data.
private final class FunctionBox {
    let body: Database.Function

    init(_ body: @escaping Database.Function) {
        self.body = body
    }
}

extension SQLiteValue {
    /// The value of a function argument.
    fileprivate init(sqlite3Value value: OpaquePointer?) {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER:
            self = .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT:
            self = .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            // The pointer before the length, as for columns.
            guard let text = sqlite3_value_text(value) else {
                self = .text("")
                return
            }
            self = .text(String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(value))), as: UTF8.self))
        case SQLITE_BLOB:
            guard let blob = sqlite3_value_blob(value) else {
                self = .blob([])
                return
            }
            self = .blob(Array(UnsafeRawBufferPointer(start: blob, count: Int(sqlite3_value_bytes(value)))))
        default:
            self = .null
        }
    }

    /// Makes this value the result of a function call.
    fileprivate func setResult(of context: OpaquePointer?) {
        switch self {
        case .null:
            sqlite3_result_null(context)
        case .integer(let number):
            sqlite3_result_int64(context, number)
        case .real(let number):
            sqlite3_result_double(context, number)
        case .text(let text):
            var text = text
            text.withUTF8 { bytes in
                // A nil pointer would be NULL: empty text gets an empty C string.
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    sqlite3_result_text64(context, "", 0, hp_sqlite_transient(), UInt8(SQLITE_UTF8))
                    return
                }
                base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
                    sqlite3_result_text64(context, chars, sqlite3_uint64(bytes.count), hp_sqlite_transient(), UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let bytes):
            if bytes.isEmpty {
                sqlite3_result_zeroblob(context, 0)
            } else {
                bytes.withUnsafeBytes { raw in
                    sqlite3_result_blob64(context, raw.baseAddress, sqlite3_uint64(raw.count), hp_sqlite_transient())
                }
            }
        }
    }
}
