import RCCore

/// Deterministic mutations of seed inputs, libFuzzer-style but without coverage feedback: the short
/// corpus run in CI. Bit flips, byte inserts and deletes, interesting bytes, splices between seeds,
/// truncations, duplicated ranges and random bytes.
public struct FuzzMutator: Sendable {
    public var generator: SplitMix64
    public let seeds: [[UInt8]]

    /// Bytes that change how the parsers read text: structure, quotes, escapes, separators, digits.
    static let interesting: [UInt8] = Array("{}[]\":,\\\n\r\t =#;.-+~/0189eEuxTZ".utf8) + [0, 0x7F, 0xC3, 0xFF]

    public init(seeds: [[UInt8]], seed: UInt64) {
        self.seeds = seeds.isEmpty ? [[]] : seeds
        generator = SplitMix64(seed: seed)
    }

    /// A new input: one seed with one to four mutations applied.
    public mutating func next() -> [UInt8] {
        var bytes = seeds[Int.random(in: 0..<seeds.count, using: &generator)]
        for _ in 0..<Int.random(in: 1...4, using: &generator) { mutate(&bytes) }
        return bytes
    }

    private mutating func mutate(_ bytes: inout [UInt8]) {
        func position(_ count: Int) -> Int { Int.random(in: 0...count, using: &generator) }
        switch Int.random(in: 0..<9, using: &generator) {
        case 0 where !bytes.isEmpty:  // flip a bit
            let i = position(bytes.count - 1)
            bytes[i] ^= 1 << UInt8.random(in: 0..<8, using: &generator)
        case 1:  // insert an interesting byte
            bytes.insert(Self.interesting.randomElement(using: &generator)!, at: position(bytes.count))
        case 2 where !bytes.isEmpty:  // delete a range
            let start = position(bytes.count - 1)
            bytes.removeSubrange(start..<min(bytes.count, start + Int.random(in: 1...8, using: &generator)))
        case 3 where !bytes.isEmpty:  // overwrite with an interesting byte
            bytes[position(bytes.count - 1)] = Self.interesting.randomElement(using: &generator)!
        case 4:  // splice: the head of this input, the tail of another seed
            let other = seeds.randomElement(using: &generator)!
            bytes = Array(bytes[..<position(bytes.count)]) + Array(other[position(other.count)...])
        case 5:  // truncate
            bytes.removeLast(bytes.count - position(bytes.count))
        case 6 where !bytes.isEmpty:  // duplicate a range
            let start = position(bytes.count - 1)
            let range = start..<min(bytes.count, start + Int.random(in: 1...16, using: &generator))
            bytes.insert(contentsOf: bytes[range], at: position(bytes.count))
        case 7:  // insert random bytes
            let random = (0..<Int.random(in: 1...8, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            bytes.insert(contentsOf: random, at: position(bytes.count))
        default:  // a digit string somewhere: numbers drive versions, durations and sizes
            let digits = String(
                UInt64.random(in: 0...UInt64.max, using: &generator) >> UInt64.random(in: 0...63, using: &generator))
            bytes.insert(contentsOf: Array(digits.utf8), at: position(bytes.count))
        }
    }
}
