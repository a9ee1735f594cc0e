import ProtoWire
import Testing

@Suite struct VarintTests {
    @Test("a varint is read from one to ten bytes and the position moves past it")
    func readsEveryLength() {
        let cases: [([UInt8], UInt64)] = [
            ([0x00], 0), ([0x01], 1), ([0x7F], 127), ([0x80, 0x01], 128), ([0xAC, 0x02], 300),
            ([0xFF, 0xFF, 0xFF, 0xFF, 0x0F], UInt64(UInt32.max)),
            ([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], UInt64.max),
        ]
        for (bytes, value) in cases {
            let framed = [0x99] + bytes + [0x42]
            var position = 1
            #expect(Varint.read(framed, at: &position) == value, "\(bytes)")
            #expect(position == 1 + bytes.count)
        }
    }

    @Test("a varint cut off by the end of the bytes, or longer than 64 bits, is nil")
    func refusesTruncatedAndOverlong() {
        var position = 0
        #expect(Varint.read([0x80, 0x80] as [UInt8], at: &position) == nil)
        position = 0
        #expect(Varint.read([UInt8](), at: &position) == nil)
        position = 0
        #expect(Varint.read([UInt8](repeating: 0x80, count: 11) + [0x01], at: &position) == nil)
        // A slice reads from its own indices.
        let slice = ([0x05, 0xAC, 0x02] as [UInt8])[1...]
        var index = slice.startIndex
        #expect(Varint.read(slice, at: &index) == 300)
        #expect(index == slice.endIndex)
    }
}
