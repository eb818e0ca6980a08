/// One sample of a metric family: its labels (in the order written) and its value.
public struct MetricSample: Sendable, Equatable {
    public var labels: [(name: String, value: String)]
    public var value: Double

    public init(labels: [(name: String, value: String)] = [], value: Double) {
        self.labels = labels
        self.value = value
    }

    // Tuples are not Equatable: compared label by label (NaN values compare equal to each other,
    // so a page with a NaN sample equals itself).
    public static func == (a: MetricSample, b: MetricSample) -> Bool {
        a.labels.count == b.labels.count
            && zip(a.labels, b.labels).allSatisfy { $0.name == $1.name && $0.value == $1.value }
            && (a.value == b.value || (a.value.isNaN && b.value.isNaN))
    }
}

/// A metric family as the Prometheus text format writes it: `# HELP`, `# TYPE`, then its samples.
/// `name` and the label names are the program's own (valid metric names); `help` and the label
/// values may carry anything (a device's report) and are escaped when rendered.
public struct MetricFamily: Sendable {
    public enum Kind: String, Sendable {
        case counter, gauge
    }

    public var name: String
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

/// The Prometheus text exposition format (version 0.0.4), written: what node_exporter's textfile
/// collector reads and what a `/metrics` page serves. Escaping follows the format: in `# HELP`
/// texts a backslash and a newline, in label values those and the double quote. Values are
/// written as integers when they are whole (no exponent: `1000000`, not `1e+06`), `+Inf`, `-Inf`
/// and `NaN` as the format spells them.
public enum PrometheusText {
    /// The content type of a page in this format.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The page for `families`, in the order given; a family without samples still gets its
    /// `# HELP` and `# TYPE` lines.
    public static func render(_ families: [MetricFamily]) -> String {
        var out = ""
        for family in families {
            out += "# HELP \(family.name) \(escaped(family.help, quote: false))\n"
            out += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            for sample in family.samples {
                out += family.name
                if !sample.labels.isEmpty {
                    out += "{"
                    out += sample.labels.map { "\($0.name)=\"\(escaped($0.value, quote: true))\"" }
                        .joined(separator: ",")
                    out += "}"
                }
                out += " " + number(sample.value) + "\n"
            }
        }
        return out
    }

    /// `text` with `\`, newline (and `"` when `quote`) escaped, over Unicode scalars.
    public static func escaped(_ text: String, quote: Bool) -> String {
        guard text.utf8.contains(where: { $0 == 0x5C || $0 == 0x0A || (quote && $0 == 0x22) }) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out.append(contentsOf: #"\\"#.unicodeScalars)
            case "\n": out.append(contentsOf: #"\n"#.unicodeScalars)
            case "\"" where quote: out.append(contentsOf: #"\""#.unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    /// A sample value as the format writes it.
    public static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        // Whole values within Int64 as integers (a count of 10^15 devices never becomes 1e+15).
        if value == value.rounded(), abs(value) < 9.2e18 { return String(Int64(value)) }
        return "\(value)"
    }
}
