/// One sample of a metric family: its labels, in the order given, and its value.
public struct MetricSample: Sendable, Equatable {
    /// Label names are the caller's constants (`[a-zA-Z_][a-zA-Z0-9_]*`); values may be any text
    /// (versions, device ids, error words from a server): the renderer escapes them.
    public var labels: [(name: String, value: String)]
    public var value: Double

    public init(labels: [(name: String, value: String)] = [], value: Double) {
        self.labels = labels
        self.value = value
    }

    public static func == (lhs: MetricSample, rhs: MetricSample) -> Bool {
        // NaN is a value like another here: a sample of NaN equals another of NaN.
        lhs.labels.count == rhs.labels.count
            && zip(lhs.labels, rhs.labels).allSatisfy { $0.name == $1.name && $0.value == $1.value }
            && (lhs.value == rhs.value || (lhs.value.isNaN && rhs.value.isNaN))
    }
}

/// A metric family: the `# HELP` and `# TYPE` lines and the samples under one name.
public struct MetricFamily: Sendable {
    /// The Prometheus types this project writes (no histograms or summaries).
    public enum Kind: String, Sendable {
        case counter, gauge
    }

    /// The metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`, a constant of the caller's: it is written as it is).
    public var name: String
    /// One line of help; any text (it is escaped).
    public var help: String
    public var kind: Kind
    public var samples: [MetricSample]

    public init(name: String, help: String, kind: Kind, samples: [MetricSample]) {
        self.name = name
        self.help = help
        self.kind = kind
        self.samples = samples
    }
}

/// The Prometheus text exposition format (version 0.0.4), as node_exporter's textfile collector
/// and `/metrics` scrapers read it: per family `# HELP name text`, `# TYPE name kind`, then one
/// line per sample, `name{label="value",...} number`. Families and samples come out in the
/// caller's order (nothing is sorted), and a family without samples is left out (as the
/// Prometheus client libraries do: a `# TYPE` without a sample tells a scraper nothing).
///
/// Escaping, as the format defines it: in label values `\` → `\\`, `"` → `\"` and line feed →
/// `\n`; in help text `\` → `\\` and line feed → `\n` (a `"` stands for itself there). Nothing
/// else needs escaping: a value's other bytes (carriage returns, control characters, any UTF-8)
/// are read back as they are between the quotes, and a Swift `String` is always valid UTF-8.
/// Linear in the size of the output.
public enum PrometheusText {
    /// The media type a scraper is told (`Content-Type`).
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public static func render(_ families: [MetricFamily]) -> String {
        var out: [UInt8] = []
        for family in families where !family.samples.isEmpty {
            append("# HELP ", to: &out)
            append(family.name, to: &out)
            out.append(UInt8(ascii: " "))
            appendEscaped(family.help, quote: false, to: &out)
            append("\n# TYPE ", to: &out)
            append(family.name, to: &out)
            out.append(UInt8(ascii: " "))
            append(family.kind.rawValue, to: &out)
            out.append(UInt8(ascii: "\n"))
            for sample in family.samples {
                append(family.name, to: &out)
                if !sample.labels.isEmpty {
                    out.append(UInt8(ascii: "{"))
                    for (index, label) in sample.labels.enumerated() {
                        if index > 0 { out.append(UInt8(ascii: ",")) }
                        append(label.name, to: &out)
                        append("=\"", to: &out)
                        appendEscaped(label.value, quote: true, to: &out)
                        out.append(UInt8(ascii: "\""))
                    }
                    out.append(UInt8(ascii: "}"))
                }
                out.append(UInt8(ascii: " "))
                append(number(sample.value), to: &out)
                out.append(UInt8(ascii: "\n"))
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A sample value as the format spells it: `+Inf`, `-Inf`, `NaN`, integers without a
    /// fraction (`42`, not `42.0`), other numbers in Swift's shortest round-trip form (`0.25`,
    /// `1.5e-07`), which Go's `strconv.ParseFloat` reads back exactly.
    public static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Inf" : "+Inf" }
        // Exact integers up to 2^53 print as integers (a count, a Unix time in whole seconds).
        if value == value.rounded(.towardZero), value.magnitude <= 9_007_199_254_740_992 {
            return String(Int64(value))
        }
        return value.description
    }

    /// Whether `name` is a valid metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
    public static func isValidMetricName(_ name: String) -> Bool {
        isValidName(name, colons: true)
    }

    /// Whether `name` is a valid label name (`[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__`,
    /// which Prometheus reserves).
    public static func isValidLabelName(_ name: String) -> Bool {
        isValidName(name, colons: false) && !name.hasPrefix("__")
    }

    private static func isValidName(_ name: String, colons: Bool) -> Bool {
        guard !name.isEmpty else { return false }
        for (index, byte) in name.utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"):
                continue
            case UInt8(ascii: "0")...UInt8(ascii: "9") where index > 0: continue
            case UInt8(ascii: ":") where colons: continue
            default: return false
            }
        }
        return true
    }

    private static func append(_ text: String, to out: inout [UInt8]) {
        out.append(contentsOf: text.utf8)
    }

    /// Escapes byte by byte (never by `Character`: a quote followed by a combining mark is one
    /// `Character`, and would slip past a comparison with `"`).
    private static func appendEscaped(_ text: String, quote: Bool, to out: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\"") where quote: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            default: out.append(byte)
            }
        }
    }
}
