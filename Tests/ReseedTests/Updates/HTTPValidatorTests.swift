import Foundation
@testable import Reseed
import Testing

/// What the channel client makes of a response's dates and codings, as tables.
struct HTTPValidatorTests {
    @Test(arguments: [
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
        ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),
        ("Wed, 01 Jan 2025 00:00:00 GMT", 1_735_689_600),
        ("Tue, 29 Feb 2028 23:59:59 GMT", 1_835_481_599),
        (" Sun, 06 Nov 1994 08:49:37 GMT ", 784_111_777),
    ] as [(String, Int64)])
    func anIMFFixdateIsRead(text: String, seconds: Int64) {
        #expect(HTTPDate.seconds(text) == seconds)
    }

    @Test(arguments: [
        "Sunday, 06-Nov-94 08:49:37 GMT",  // RFC 850: obsolete, not read
        "Sun Nov  6 08:49:37 1994",  // asctime: obsolete, not read
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49 GMT",
        "",
    ])
    func anythingElseIsNotADate(text: String) {
        #expect(HTTPDate.seconds(text) == nil)
    }

    @Test(arguments: [
        ("Wed, 01 Jan 2025 00:00:00 GMT", "Wed, 01 Jan 2025 00:00:00 GMT", false),  // same second: weak
        ("Wed, 01 Jan 2025 00:00:00 GMT", "Wed, 01 Jan 2025 00:00:01 GMT", true),
        ("Wed, 01 Jan 2025 00:00:05 GMT", "Wed, 01 Jan 2025 00:00:01 GMT", false),  // a date in the future
        ("Wed, 01 Jan 2025 00:00:00 GMT", nil, false),
        ("Sunday, 01-Jan-25 00:00:00 GMT", "Wed, 01 Jan 2025 00:00:09 GMT", false),
    ] as [(String, String?, Bool)])
    func lastModifiedIsAValidatorOnlyWhenTheResponseIsASecondLater(modified: String, date: String?, strong: Bool) {
        var headers = ["last-modified": modified]
        headers["date"] = date
        #expect(HTTPTransfer.Response(status: 200, headers: headers).strongLastModified == (strong ? modified : nil))
    }

    @Test(arguments: [
        (nil, nil), ("identity", nil), ("Identity", nil), ("", nil),
        ("gzip", "gzip"), ("br", "br"), ("identity, gzip", "identity, gzip"), ("x-gzip", "x-gzip"),
    ] as [(String?, String?)])
    func anyContentCodingButIdentityWasNotAskedFor(coding: String?, refused: String?) {
        var headers: [String: String] = [:]
        headers["content-encoding"] = coding
        #expect(HTTPTransfer.Response(status: 200, headers: headers).unrequestedContentEncoding == refused)
    }
}
