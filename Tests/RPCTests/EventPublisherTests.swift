import Foundation
import Proto
import RPC
import Runtime
import Testing
import ZMQ

/// Events go out on the RPC server's own I/O thread (its PUB socket).
@Suite struct EventPublisherTests {
    func eventServer(_ events: [String]) throws -> RPCServer {
        let server = try RPCServer(
            context: testContext,
            configuration: .init(endpoints: [uniqueEndpoint()], processName: "events", eventEndpoints: events),
            logger: testLogger)
        try server.start()
        return server
    }

    @Test func subscriberReceivesTopicAndProtobufEventByPrefix() async throws {
        let endpoint = uniqueEndpoint("ipc")
        let publisher = try eventServer([endpoint])
        defer { publisher.stop() }
        let subscriber = try Socket(testContext, .sub)
        defer { subscriber.close() }
        try subscriber.subscribe(Array("item.".utf8))
        try subscriber.connect(endpoint)

        var item = Item()
        item.key = "0f8fad5b-d9cb-469f-a165-70867728950e"
        item.name = "Fluffy Mac"
        var event = ItemEvent()
        event.key = item.key
        event.item = item
        // A subscription takes effect asynchronously: publish until the first event arrives.
        var received: [[UInt8]]?
        for _ in 0..<500 where received == nil {
            publisher.publish(topic: EventTopic.imageStored, ImageEvent())  // filtered out by the prefix
            publisher.publish(topic: EventTopic.itemCreated, event)
            try await Task.sleep(for: .milliseconds(5))
            received = try subscriber.receive(dontWait: true)
        }
        let frames = try #require(received)
        #expect(frames.count == 2)
        #expect(String(decoding: frames[0], as: UTF8.self) == "item.created")
        #expect(try ItemEvent(serializedBytes: frames[1]).item?.name == "Fluffy Mac")
    }

    @Test func wildcardPortIsResolved() throws {
        let publisher = try eventServer(["tcp://127.0.0.1:0"])
        defer { publisher.stop() }
        let bound = try #require(publisher.boundEventEndpoints.first)
        #expect(bound.hasPrefix("tcp://127.0.0.1:"))
        #expect(!bound.hasSuffix(":0"))
    }
}
