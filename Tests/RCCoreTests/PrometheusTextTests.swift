import RCCore
import TestSupport
import Testing

/// ``PrometheusText``: the exposition format line by line, numbers, escaping of any text (checked
/// against a reading of the format's escapes and by Prometheus' own `promtool check metrics`).
@Suite struct PrometheusTextTests {
    @Test func rendersFamiliesInTheCallersOrder() {
        let text = PrometheusText.render([
            MetricFamily(
                name: "rcagent_stale", help: "Whether the config is stale.", kind: .gauge,
                samples: [MetricSample(value: 1)]),
            MetricFamily(
                name: "rcagent_fetches_total", help: "Fetches by result.", kind: .counter,
                samples: [
                    MetricSample(labels: [("result", "success")], value: 3),
                    MetricSample(labels: [("result", "failure"), ("x", "y")], value: 0),
                ]),
        ])
        #expect(
            text == """
                # HELP rcagent_stale Whether the config is stale.
                # TYPE rcagent_stale gauge
                rcagent_stale 1
                # HELP rcagent_fetches_total Fetches by result.
                # TYPE rcagent_fetches_total counter
                rcagent_fetches_total{result="success"} 3
                rcagent_fetches_total{result="failure",x="y"} 0

                """)
    }

    @Test func leavesOutFamiliesWithoutSamples() {
        let text = PrometheusText.render([
            MetricFamily(name: "a", help: "h", kind: .gauge, samples: []),
            MetricFamily(name: "b", help: "h", kind: .gauge, samples: [MetricSample(value: 2)]),
        ])
        #expect(text == "# HELP b h\n# TYPE b gauge\nb 2\n")
        #expect(PrometheusText.render([]) == "")
    }

    @Test(arguments: [
        (0.0, "0"), (-0.0, "0"), (1, "1"), (-7, "-7"), (42, "42"), (1_764_633_600, "1764633600"),
        (1_764_633_600.25, "1764633600.25"), (0.5, "0.5"), (1e-7, "1e-07"), (9_007_199_254_740_992, "9007199254740992"),
        (1e300, "1e+300"), (.infinity, "+Inf"), (-.infinity, "-Inf"), (.nan, "NaN"),
    ])
    func spellsNumbersAsTheFormatDoes(_ value: Double, _ expected: String) {
        #expect(PrometheusText.number(value) == expected)
    }

    @Test(arguments: [
        ("plain", "plain"), (#"a"b"#, #"a\"b"#), (#"back\slash"#, #"back\\slash"#), ("two\nlines", #"two\nlines"#),
        (#"\n"#, #"\\n"#), ("cr\r", "cr\r"), ("\"\u{301}", "\\\"\u{301}"), ("}\n{x=\"1\"} 9", #"}\n{x=\"1\"} 9"#),
    ])
    func escapesLabelValues(_ value: String, _ escaped: String) {
        let text = PrometheusText.render([
            MetricFamily(name: "m", help: "h", kind: .gauge, samples: [MetricSample(labels: [("v", value)], value: 1)])
        ])
        #expect(text == "# HELP m h\n# TYPE m gauge\nm{v=\"\(escaped)\"} 1\n")
    }

    @Test func escapesHelpTextButNotItsQuotes() {
        let text = PrometheusText.render([
            MetricFamily(
                name: "m", help: "say \"hi\"\\\n# TYPE m counter", kind: .gauge, samples: [MetricSample(value: 1)])
        ])
        #expect(text == "# HELP m say \"hi\"\\\\\\n# TYPE m counter\n# TYPE m gauge\nm 1\n")
        #expect(text.split(separator: "\n").count == 3)
    }

    /// Any text as a label value comes out on one line and reads back as it was.
    @Test(arguments: [UInt64(0x5eed), 0xC0FFEE])
    func arbitraryLabelValuesRoundTrip(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        for _ in 0..<500 {
            let value = Self.hostileText(&generator)
            let text = PrometheusText.render([
                MetricFamily(
                    name: "m", help: value, kind: .gauge, samples: [MetricSample(labels: [("v", value)], value: 1)])
            ])
            let lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            #expect(lines.count == 4)  // HELP, TYPE, the sample, and the empty rest after the last newline
            let sample = Array(lines[2])
            let prefix = Array("m{v=\"".utf8)
            let suffix = Array("\"} 1".utf8)
            try #require(sample.starts(with: prefix) && sample.reversed().starts(with: suffix.reversed()))
            let inner = sample[prefix.count..<(sample.count - suffix.count)]
            #expect(try Self.unescape(inner, quote: true) == Array(value.utf8))
            let help = Array(lines[0].dropFirst("# HELP m ".utf8.count))
            #expect(try Self.unescape(help[...], quote: false) == Array(value.utf8))
        }
    }

    /// Prometheus' own linter and parser take hostile values written by the renderer.
    @Test func promtoolAcceptsHostileValues() throws {
        var generator = SplitMix64(seed: 7)
        var samples: [MetricSample] = []
        for index in 0..<200 {
            samples.append(
                MetricSample(
                    labels: [("index", String(index)), ("value", Self.hostileText(&generator))], value: Double(index)))
        }
        let text = PrometheusText.render([
            MetricFamily(
                name: "rcagent_test_hostile", help: "Hostile \"values\" \\ and\nlines.", kind: .gauge,
                samples: samples),
            MetricFamily(
                name: "rcagent_test_events_total", help: "Counts.", kind: .counter,
                samples: [MetricSample(value: .infinity), MetricSample(labels: [("a", "b")], value: 0.5)]),
        ])
        let result = try Self.promtool(text)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    }

    @Test func namesAreChecked() {
        #expect(PrometheusText.isValidMetricName("rcagent_fleet:devices_total"))
        #expect(!PrometheusText.isValidMetricName("1abc"))
        #expect(!PrometheusText.isValidMetricName("a-b"))
        #expect(!PrometheusText.isValidMetricName(""))
        #expect(PrometheusText.isValidLabelName("template_version"))
        #expect(!PrometheusText.isValidLabelName("__name__"))
        #expect(!PrometheusText.isValidLabelName("a:b"))
    }

    @Test func samplesCompareLabelsAndValues() {
        #expect(MetricSample(labels: [("a", "b")], value: 1) == MetricSample(labels: [("a", "b")], value: 1))
        #expect(MetricSample(labels: [("a", "b")], value: 1) != MetricSample(labels: [("a", "c")], value: 1))
        #expect(MetricSample(value: .nan) == MetricSample(value: .nan))
        #expect(MetricSample(value: 1) != MetricSample(labels: [("a", "b")], value: 1))
    }

    // MARK: - Helpers

    /// Runs `promtool check metrics` on `text` (its standard input).
    static func promtool(_ text: String) throws -> ProcessResult {
        let process = try Subprocess("/usr/bin/promtool", ["check", "metrics"], input: true)
        process.write(text)
        process.closeInput()
        return process.finish()
    }

    /// The format's escapes read back: `\\`, `\n`, and in label values `\"`; anything else after a
    /// backslash, or a bare quote in a label value, or a raw line feed, is an error.
    static func unescape(_ bytes: ArraySlice<UInt8>, quote: Bool) throws -> [UInt8] {
        var out: [UInt8] = []
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "\\"):
                switch iterator.next() {
                case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "n"): out.append(UInt8(ascii: "\n"))
                case UInt8(ascii: "\"") where quote: out.append(UInt8(ascii: "\""))
                default: throw TestFailure("a backslash the format does not define")
                }
            case UInt8(ascii: "\"") where quote: throw TestFailure("a bare quote inside a label value")
            case UInt8(ascii: "\n"): throw TestFailure("a raw line feed")
            default: out.append(byte)
            }
        }
        return out
    }

    static func hostileText(_ generator: inout SplitMix64) -> String {
        let pieces = [
            "\"", "\\", "\n", "\r", "\r\n", "\t", "{", "}", ",", "=", " ", "#", "\\n", "\\\"", "\"\u{301}", "\u{0}",
            "\u{1b}[2J", "\u{2028}", "\u{FEFF}", "👩‍💻", "é", "1.2.3", "} 1\nrcagent_stale 0",
        ]
        var text = ""
        for _ in 0..<Int.random(in: 0...16, using: &generator) {
            text += pieces.randomElement(using: &generator)!
        }
        return text
    }
}
