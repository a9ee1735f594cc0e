import Foundation

/// `homepwner-bench items` (issue: item service).
enum ItemsBenchmark {
    static func run(_ arguments: [String]) async {
        FileHandle.standardError.write(Data("items benchmark: not written yet\n".utf8))
        exit(1)
    }
}
