/// The one JSON reader of every input the agent does not control: defaults and fetched documents,
/// templates, control-socket lines, MQTT and realtime-stream messages, server answers.
///
/// It checks RFC 8259 and builds the ``JSONValue`` tree in one pass over the bytes, with its own
/// stack of open containers instead of recursion, so a hostile document costs time linear in its
/// size and no stack at all. (The toolchain's JSONDecoder recursed once per nesting level, with a
/// cost that grew with the square of the depth: 500 levels took seconds, and about 430 overflowed the
/// stack of a connection thread.) Errors say what is wrong and where: line, column and byte offset.
///
/// Nesting is limited to ``maximumDepth`` levels, far below what any stack holds, because the
/// tree's other operations (writing it out, comparing it, releasing it) do recurse.
///
/// Members are sorted, and duplicates found, by the UTF-8 bytes of their names (``ByteKey``), never
/// by Swift's canonical equivalence, whose cost grows with the square of a run of combining marks.
/// Two names that are different bytes but canonically equivalent (`"caf\u00e9"` and `"cafe\u0301"`,
/// U+212A KELVIN SIGN and `K`) are refused too, like a name given twice: every `String`-keyed
/// dictionary after the reader would make them one. That check normalizes, so its cost is bounded
/// first: a string (name or value) may not hold more than ``maximumNonStarters`` combining marks in
/// a row (Unicode's Stream-Safe Text Format, UAX #15), which no text of any language needs. With that
/// bound, normalizing any string the reader returns, and so comparing or hashing it as a `String`
/// anywhere after, is linear in its length.
enum JSONReader {
    /// Deepest nesting of arrays and objects accepted.
    static let maximumDepth = 100

    /// Most combining marks (scalars of a nonzero canonical combining class) in a row in a string.
    static let maximumNonStarters = 30

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSONValue {
        var scanner = Scanner(bytes: bytes)
        return try scanner.document()
    }

    /// An array or object being read.
    struct Container {
        let isObject: Bool
        /// Byte offset of its opening bracket, for errors.
        let start: Int
        var items: [JSONValue] = []
        var members: [(key: String, value: JSONValue)] = []
        /// The member name read before the value now being read.
        var key = ""
        /// Whether every member name read so far is ASCII (as the scanner saw its bytes).
        var namesAreASCII = true

        mutating func add(_ value: JSONValue) {
            if isObject { members.append((key, value)) } else { items.append(value) }
        }
    }

    struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0
        /// Unescaped bytes of the string being read, reused across strings.
        var scratch: [UInt8] = []
        /// Whether the last string read (its unescaped text) is ASCII.
        var lastStringIsASCII = true
        /// The names of the objects a pull reader has open, outermost first (``PulledObject``): one
        /// buffer for all of them, so an object's names cost no allocation of its own.
        var pulledNames: [String] = []
        /// Whether the names of the object a pull reader closed last came in byte order.
        var lastObjectInOrder = true

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        func fail(_ what: String, at offset: Int? = nil) -> JSONParseError {
            JSONParseError(reason: "\(what) at \(Self.position(of: min(offset ?? i, bytes.count), in: bytes))")
        }

        func tooDeep() -> JSONParseError { fail("nesting deeper than \(JSONReader.maximumDepth) levels") }

        static func position(of offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> String {
            var line = 1
            var lineStart = 0
            for index in 0..<offset where bytes[index] == UInt8(ascii: "\n") {
                line += 1
                lineStart = index + 1
            }
            return "line \(line), column \(offset - lineStart + 1) (byte \(offset))"
        }

        var current: UInt8? { i < bytes.count ? bytes[i] : nil }

        mutating func skipSpace() {
            while i < bytes.count {
                let c = bytes[i]
                guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
                i += 1
            }
        }

        func describe(_ c: UInt8?) -> String {
            guard let c else { return "end of input" }
            return c >= 0x20 && c < 0x7F ? "'\(Character(Unicode.Scalar(c)))'" : "byte 0x\(String(c, radix: 16))"
        }

        /// One value and nothing after it.
        mutating func document() throws(JSONParseError) -> JSONValue {
            skipSpace()
            let value = try value(depth: 0)
            guard i == bytes.count else { throw fail("unexpected \(describe(current)) after the value") }
            return value
        }

        /// The value starting here, inside `depth` containers already open (a pull reader's,
        /// ``DocumentShape``): the scanner is left after it and the space that follows.
        mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
            var open: [Container] = []
            while true {
                // A value starts here.
                var value: JSONValue
                switch current {
                case UInt8(ascii: "{")?, UInt8(ascii: "[")?:
                    let isObject = current == UInt8(ascii: "{")
                    guard depth + open.count < JSONReader.maximumDepth else { throw tooDeep() }
                    let start = i
                    i += 1
                    skipSpace()
                    if current == UInt8(ascii: isObject ? "}" : "]") {
                        i += 1
                        value = isObject ? .object([]) : .array([])
                    } else {
                        var container = Container(isObject: isObject, start: start)
                        if isObject {
                            container.key = try memberName()
                            container.namesAreASCII = lastStringIsASCII
                        }
                        open.append(container)
                        continue
                    }
                case UInt8(ascii: "\"")?: value = .string(try string())
                case UInt8(ascii: "t")?:
                    try literal("true")
                    value = .bool(true)
                case UInt8(ascii: "f")?:
                    try literal("false")
                    value = .bool(false)
                case UInt8(ascii: "n")?:
                    try literal("null")
                    value = .null
                case let c? where c == UInt8(ascii: "-") || (c >= 0x30 && c <= 0x39): value = try number()
                case let c: throw fail("expected a value, found \(describe(c))")
                }
                // After a value: add it to its container, closing containers that end here.
                while true {
                    skipSpace()
                    guard !open.isEmpty else { return value }
                    let top = open.count - 1
                    open[top].add(value)
                    let isObject = open[top].isObject
                    if current == UInt8(ascii: ",") {
                        i += 1
                        skipSpace()
                        if isObject {
                            open[top].key = try memberName()
                            if !lastStringIsASCII { open[top].namesAreASCII = false }
                        }
                        break
                    }
                    guard current == UInt8(ascii: isObject ? "}" : "]") else {
                        throw fail("expected ',' or '\(isObject ? "}" : "]")', found \(describe(current))")
                    }
                    i += 1
                    var container = open.removeLast()
                    value = isObject ? .object(try sorted(&container)) : .array(container.items)
                }
            }
        }

        /// The members of an object in the order of their names' bytes, refusing a name that appears
        /// twice, as the same bytes or as canonically equivalent ones. Takes the members out of
        /// `container`, so they are sorted in place: a copy of a 44,000-member array was 1.7 MB more
        /// at the peak of reading a 4 MiB document.
        func sorted(_ container: inout Container) throws(JSONParseError) -> [(key: String, value: JSONValue)] {
            var members: [(key: String, value: JSONValue)] = []
            swap(&members, &container.members)
            try sortByName(&members, name: \.key, allASCII: container.namesAreASCII, objectStart: container.start)
            return members
        }

        /// Sorts an object's members (whatever a reader made of them) by their names' bytes, refusing a
        /// name that appears twice, as the same bytes or as canonically equivalent ones. `allASCII`:
        /// whether every name is ASCII, as the scanner saw them; `objectStart` places the error.
        /// (Names are reached by index throughout: a lazy view of them made an array of them all, 0.7 MB
        /// for 44,000 members, at the peak of reading a 4 MiB document.)
        func sortByName<Member>(
            _ members: inout [Member], name: (Member) -> String, allASCII: Bool, objectStart: Int
        ) throws(JSONParseError) {
            // Documents mostly list their names in order already: then nothing moves, and the sort's
            // scratch buffer (half the members: 0.9 MB for 44,000) is never allocated. Each name
            // strictly before the next also means no name is there twice.
            if !Self.isInByteOrder(members.count, { name(members[$0]) }) {
                members.sort { name($0).precedesByBytes(name($1)) }
                try refuseRepeats(inByteOrder: members.count, { name(members[$0]) }, objectStart: objectStart)
            }
            if !allASCII { try refuseEquivalents(members.count, { name(members[$0]) }, objectStart: objectStart) }
        }

        /// The same check for names alone, in the order they came (a pull reader's, which keeps them
        /// apart from what it made of the members). Returns whether they came in byte order.
        func refuseDuplicates(_ names: ArraySlice<String>, allASCII: Bool, objectStart: Int) throws(JSONParseError)
            -> Bool
        {
            let first = names.startIndex
            // In byte order, as the tree's members are checked: the same error for the same object.
            guard Self.isInByteOrder(names.count, { names[first + $0] }) else {
                let sorted = names.sorted { $0.precedesByBytes($1) }
                try refuseRepeats(inByteOrder: sorted.count, { sorted[$0] }, objectStart: objectStart)
                if !allASCII { try refuseEquivalents(sorted.count, { sorted[$0] }, objectStart: objectStart) }
                return false
            }
            if !allASCII { try refuseEquivalents(names.count, { names[first + $0] }, objectStart: objectStart) }
            return true
        }

        /// Whether each of `count` names (`name(0)`, `name(1)`, ...) sorts strictly after the one before.
        static func isInByteOrder(_ count: Int, _ name: (Int) -> String) -> Bool {
            var k = 1
            while k < count {
                guard name(k - 1).precedesByBytes(name(k)) else { return false }
                k += 1
            }
            return true
        }

        /// Refuses a name, of `count` in byte order, that is the same bytes as the one before it.
        func refuseRepeats(inByteOrder count: Int, _ name: (Int) -> String, objectStart: Int) throws(JSONParseError) {
            var k = 1
            while k < count {
                if name(k).sameBytes(as: name(k - 1)) {
                    throw fail(
                        "duplicate member name \(JSONValue.string(name(k)).compactText) in the object", at: objectStart)
                }
                k += 1
            }
        }

        /// Refuses two names, of `count`, that are canonically equivalent. ASCII names are so only when
        /// they are the same bytes; others go through a String-keyed set: linear, as every string here
        /// is stream-safe.
        func refuseEquivalents(_ count: Int, _ name: (Int) -> String, objectStart: Int) throws(JSONParseError) {
            var seen: [String: String] = [:]
            seen.reserveCapacity(count)
            for k in 0..<count {
                if let earlier = seen.updateValue(name(k), forKey: name(k)) {
                    throw fail(
                        "duplicate member name \(JSONValue.string(name(k)).compactText) (also written "
                            + "\(JSONValue.string(earlier).compactText): one name in different Unicode "
                            + "normalization forms) in the object", at: objectStart)
                }
            }
        }

        /// An object a pull reader goes through member by member (``openObject(depth:)``,
        /// ``nextMember(of:)``). Its names wait in ``pulledNames`` from `namesStart` on until it ends,
        /// for the check every object gets.
        struct PulledObject {
            let start: Int
            let namesStart: Int
            var namesAreASCII = true
        }

        /// Opens the object starting here, inside `depth` containers already open; `nil` when the value
        /// here is not an object (the scanner has not moved).
        mutating func openObject(depth: Int) throws(JSONParseError) -> PulledObject? {
            guard current == UInt8(ascii: "{") else { return nil }
            guard depth < JSONReader.maximumDepth else { throw tooDeep() }
            let object = PulledObject(start: i, namesStart: pulledNames.count)
            i += 1
            skipSpace()
            return object
        }

        /// The next member's name, the scanner then at its value; `nil` once the object has ended (its
        /// names checked, the scanner after it and the space that follows). The caller reads each value
        /// (``value(depth:)`` or a pulled object) before asking for the next name.
        mutating func nextMember(of object: inout PulledObject) throws(JSONParseError) -> String? {
            if pulledNames.count > object.namesStart {
                skipSpace()
                if current == UInt8(ascii: ",") {
                    i += 1
                    skipSpace()
                } else {
                    guard current == UInt8(ascii: "}") else {
                        throw fail("expected ',' or '}', found \(describe(current))")
                    }
                    return try close(object)
                }
            } else if current == UInt8(ascii: "}") {
                return try close(object)
            }
            let name = try memberName()
            if !lastStringIsASCII { object.namesAreASCII = false }
            pulledNames.append(name)
            return name
        }

        private mutating func close(_ object: PulledObject) throws(JSONParseError) -> String? {
            i += 1
            let count = pulledNames.count - object.namesStart
            // One name cannot be there twice (most of a template's objects hold one).
            lastObjectInOrder = true
            if count > 1 {
                lastObjectInOrder = try refuseDuplicates(
                    pulledNames[object.namesStart...], allASCII: object.namesAreASCII, objectStart: object.start)
            }
            for _ in 0..<count { pulledNames.removeLast() }  // removeLast(_:) was a generic replaceSubrange
            skipSpace()
            return nil
        }

        /// `"name" :` inside an object, leaving the scanner at the member's value.
        mutating func memberName() throws(JSONParseError) -> String {
            guard current == UInt8(ascii: "\"") else {
                throw fail("expected a member name, found \(describe(current))")
            }
            let name = try string()
            skipSpace()
            guard current == UInt8(ascii: ":") else {
                throw fail("expected ':' after a member name, found \(describe(current))")
            }
            i += 1
            skipSpace()
            return name
        }

        mutating func literal(_ word: StaticString) throws(JSONParseError) {
            let start = i
            for expected in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount) {
                guard current == expected else { throw fail("invalid literal, expected \(word)", at: start) }
                i += 1
            }
        }

        mutating func number() throws(JSONParseError) -> JSONValue {
            let start = i
            func digits(_ scanner: inout Scanner) -> Int {
                let first = scanner.i
                while let c = scanner.current, c >= 0x30 && c <= 0x39 { scanner.i += 1 }
                return scanner.i - first
            }
            if current == UInt8(ascii: "-") { i += 1 }
            let integerStart = i
            let integerDigits = digits(&self)
            guard integerDigits > 0 else { throw fail("invalid number, expected a digit", at: i) }
            if integerDigits > 1 && bytes[integerStart] == 0x30 {
                throw fail("invalid number, leading zero", at: integerStart)
            }
            var isInteger = true
            if current == UInt8(ascii: ".") {
                isInteger = false
                i += 1
                guard digits(&self) > 0 else { throw fail("invalid number, expected a digit after '.'", at: i) }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                isInteger = false
                i += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { i += 1 }
                guard digits(&self) > 0 else { throw fail("invalid number, expected an exponent", at: i) }
            }
            // Up to 18 digits always fit an Int64: add them up without making a string.
            if isInteger && integerDigits <= 18 {
                var magnitude: Int64 = 0
                for k in integerStart..<i { magnitude = magnitude * 10 + Int64(bytes[k] - 0x30) }
                return .integer(integerStart > start ? -magnitude : magnitude)
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
            if isInteger, let integer = Int64(text) { return .integer(integer) }
            guard let value = Double(text), value.isFinite else { throw fail("number \(text) out of range", at: start) }
            return .double(value)
        }
    }
}
