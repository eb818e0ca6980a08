extension UInt8 {
    /// This byte's value as an ASCII hexadecimal digit (`0`–`9`, `a`–`f`, `A`–`F`), or `nil`: what
    /// every reader of hexadecimal text here (JSON's `\u` escapes, `/proc/self/maps`, the stored
    /// database images, condition numbers) decodes a digit with.
    @inlinable public var hexDigitValue: UInt8? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): self &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): self &- UInt8(ascii: "A") &+ 10
        default: nil
        }
    }
}
