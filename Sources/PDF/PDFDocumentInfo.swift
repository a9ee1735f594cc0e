import Foundation

/// The document's metadata, written to its Info dictionary: what viewers show as its
/// properties and `pdfinfo` prints. The producer is always "Homepwner".
public struct PDFDocumentInfo: Sendable, Hashable {
    /// The title viewers show in their window instead of the file name.
    public var title: String
    /// Who the document is by.
    public var author: String
    /// What the document is about.
    public var subject: String
    /// When the document was made.
    public var creationDate: Date

    /// Metadata with the given fields; empty ones are left out of the file.
    public init(title: String = "", author: String = "", subject: String = "", creationDate: Date = Date()) {
        self.title = title
        self.author = author
        self.subject = subject
        self.creationDate = creationDate
    }

    /// The producer every document of this module names.
    public static let producer = "Homepwner"

    /// The Info dictionary's text.
    var dictionary: String {
        var entries: [String] = []
        if !title.isEmpty { entries.append("/Title \(PDFSyntax.textString(title))") }
        if !author.isEmpty { entries.append("/Author \(PDFSyntax.textString(author))") }
        if !subject.isEmpty { entries.append("/Subject \(PDFSyntax.textString(subject))") }
        entries.append("/Producer \(PDFSyntax.textString(Self.producer))")
        entries.append("/CreationDate \(PDFSyntax.date(creationDate))")
        return "<< " + entries.joined(separator: " ") + " >>"
    }
}
