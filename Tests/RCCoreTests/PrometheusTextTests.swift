import RCCore
import Testing

/// ``PrometheusText``: the exposition format as Prometheus reads it.
@Suite struct PrometheusTextTests {
    @Test func familiesAreWrittenWithHelpTypeAndSamples() {
        let page = PrometheusText.render([
            MetricFamily(
                name: "rcagent_x", help: "Things.", kind: .gauge,
                samples: [
                    MetricSample(labels: [("state", "online")], value: 3),
                    MetricSample(labels: [("state", "offline"), ("site", "b")], value: 0),
                ]),
            MetricFamily(name: "rcagent_y_total", help: "Events.", kind: .counter, samples: [MetricSample(value: 12)]),
            MetricFamily(name: "rcagent_empty", help: "None yet.", kind: .gauge, samples: []),
        ])
        #expect(
            page == """
                # HELP rcagent_x Things.
                # TYPE rcagent_x gauge
                rcagent_x{state="online"} 3
                rcagent_x{state="offline",site="b"} 0
                # HELP rcagent_y_total Events.
                # TYPE rcagent_y_total counter
                rcagent_y_total 12
                # HELP rcagent_empty None yet.
                # TYPE rcagent_empty gauge

                """)
    }

    @Test func labelValuesEscapeBackslashNewlineAndQuote() {
        let page = PrometheusText.render([
            MetricFamily(
                name: "m", help: "a \\ b\nc \"d\"", kind: .gauge,
                samples: [MetricSample(labels: [("v", "4\"5\n\\x} 1\n# TYPE m counter")], value: 1)])
        ])
        #expect(
            page == #"""
                # HELP m a \\ b\nc "d"
                # TYPE m gauge
                m{v="4\"5\n\\x} 1\n# TYPE m counter"} 1

                """#)
        // Every line a sample line or a comment: nothing from the label ends one.
        #expect(page.split(separator: "\n").count == 3)
    }

    @Test(arguments: [
        (0.0, "0"), (-0.0, "0"), (1_000_000, "1000000"), (1e15, "1000000000000000"), (-42, "-42"), (0.5, "0.5"),
        (1796182284.536, "1796182284.536"), (.infinity, "+Inf"), (-.infinity, "-Inf"), (.nan, "NaN"),
    ])
    func numbersAreWrittenWithoutExponentsWhenWhole(_ value: Double, _ text: String) {
        #expect(PrometheusText.number(value) == text)
    }

    @Test func samplesCompareByLabelsAndValue() {
        #expect(MetricSample(labels: [("a", "1")], value: 1) == MetricSample(labels: [("a", "1")], value: 1))
        #expect(MetricSample(labels: [("a", "1")], value: 1) != MetricSample(labels: [("a", "2")], value: 1))
        #expect(MetricSample(value: .nan) == MetricSample(value: .nan))
    }
}
