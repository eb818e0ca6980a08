import RCCore

/// What a fetched document goes through before it is read, when the config asks for more than
/// JSON: the signed-document gate (`TrustedKeys=`) verifies an envelope and hands back the document
/// inside it. ``DocumentReader`` calls ``open(_:name:)`` on the fetched bytes, reads the document it
/// returns, and calls `accept` only once that document was read: a validly signed payload whose
/// document the agent refuses is not recorded as accepted.
package protocol DocumentOpener: Sendable {
    /// Identifies what the opener accepts (the trusted keys, and whether the last accepted document
    /// has expired): part of the sources' ETag context, so a change re-reads the document whole.
    var contextTag: String { get }

    /// The document inside `bytes`, or why it is refused (the error names `name`).
    func open(_ bytes: [UInt8], name: String) throws(DocumentError) -> OpenedDocument
}

/// A document an opener let through, and what to do once it has been read.
package struct OpenedDocument: Sendable {
    package let document: JSONValue
    package let accept: @Sendable () throws(DocumentError) -> Void

    package init(document: JSONValue, accept: @escaping @Sendable () throws(DocumentError) -> Void) {
        self.document = document
        self.accept = accept
    }
}
