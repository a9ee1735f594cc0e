import Foundation

/// `homepwner-bench images` (issue: image service).
enum ImagesBenchmark {
    static func run(_ arguments: [String]) async {
        FileHandle.standardError.write(Data("images benchmark: not written yet\n".utf8))
        exit(1)
    }
}
