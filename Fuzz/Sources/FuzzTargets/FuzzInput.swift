import ProtoWire

/// How one fuzz input carries several pieces (frames of a message, chunks of a connection):
/// each a varint length and its bytes. libFuzzer mutates the lengths as it mutates any byte,
/// so a piece that a mutation left short or long just ends the split: the rest of the input
/// is the last piece.
enum FuzzInput {
    /// The pieces of `input`, at most `limit`.
    static func pieces(_ input: UnsafeRawBufferPointer, limit: Int = 64) -> [[UInt8]] {
        var pieces: [[UInt8]] = []
        var position = 0
        while position < input.count {
            var end = position
            if pieces.count < limit - 1, let length = Varint.read(input, at: &end), length <= UInt64(input.count - end) {
                pieces.append([UInt8](input[end..<end + Int(length)]))
                position = end + Int(length)
            } else {
                pieces.append([UInt8](input[position...]))
                break
            }
        }
        return pieces
    }

    /// The input whose `pieces` are `pieces` (fewer than the limit): what seeds are written as.
    static func joined(_ pieces: [[UInt8]]) -> [UInt8] {
        var input: [UInt8] = []
        for piece in pieces {
            var length = UInt64(piece.count)
            while length >= 0x80 {
                input.append(UInt8(length & 0x7F) | 0x80)
                length >>= 7
            }
            input.append(UInt8(length))
            input += piece
        }
        return input
    }
}
