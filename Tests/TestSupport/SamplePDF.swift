/// Small valid PDFs made at test time, for the sniffer's and the image service's tests.
public enum SamplePDF {
    /// One page with `lines` of Helvetica text; `padding` bytes more in an unreferenced stream
    /// of comment lines. The cross-reference table names each object's real offset, so
    /// `qpdf --check` finds no error in it.
    public static func make(lines: [String] = ["Receipt", "1 toaster  49.99"], padding: Int = 0, version: String = "1.4") -> [UInt8] {
        var content = "BT /F1 14 Tf 72 720 Td 18 TL"
        for line in lines { content += " (\(line)) '" }
        content += " ET"
        var objects = [
            "<< /Type /Catalog /Pages 2 0 R >>",
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
            "<< /Length \(content.utf8.count) >>\nstream\n\(content)\nendstream",
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
        if padding > 0 {
            let filler = String(repeating: "%filler\n", count: padding / 8 + 1)
            objects.append("<< /Length \(filler.utf8.count) >>\nstream\n\(filler)\nendstream")
        }
        // A comment of bytes over 127 on the second line marks the file as binary, as writers do.
        var data = Array("%PDF-\(version)\n".utf8) + [0x25, 0xE2, 0xE3, 0xCF, 0xD3, 0x0A]
        var offsets: [Int] = []
        for (index, object) in objects.enumerated() {
            offsets.append(data.count)
            data += Array("\(index + 1) 0 obj\n\(object)\nendobj\n".utf8)
        }
        let xref = data.count
        var table = "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
        for offset in offsets {
            let digits = String(offset)
            table += String(repeating: "0", count: 10 - digits.count) + digits + " 00000 n \n"
        }
        table += "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R >>\nstartxref\n\(xref)\n%%EOF\n"
        return data + Array(table.utf8)
    }
}
