/// Rendered text as bytes that answers send in place: the fleet's part of `/metrics` is rendered
/// once per change of the picture and shared by every connection sending it, however many there
/// are and however slowly they read (libmicrohttpd keeps a reference until it has sent the last
/// byte). Immutable once made.
final class PageBytes: @unchecked Sendable {
    let base: UnsafeMutableRawPointer
    let count: Int

    init(_ text: String) {
        var text = text
        count = text.utf8.count
        base = .allocate(byteCount: max(count, 1), alignment: 1)
        text.withUTF8 { bytes in
            if let source = bytes.baseAddress { base.copyMemory(from: source, byteCount: count) }
        }
    }

    deinit { base.deallocate() }
}
