import Foundation
import RCCore
import RCFuzzing
import RCService
import RCTemplate
import Testing

extension Reliability {
    /// The short, deterministic run of every parser fuzz target (`make fuzz` runs them for longer under
    /// libFuzzer): each seed of Tests/Fuzz/corpus/<target>/, then a few thousand seeded mutations of
    /// those seeds. An input that breaks one of the target's properties fails the test with the input;
    /// one that crashes or hangs the parser fails the run.
    @Suite struct ReliabilityParserCorpusTests {
        static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus")
        static let mutationsPerTarget = 3_000

        static func seeds(of target: String) throws -> [(name: String, bytes: [UInt8])] {
            let directory = corpus.appendingPathComponent(target)
            return try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted().map { name in
                (name, Array(try Data(contentsOf: directory.appendingPathComponent(name))))
            }
        }

        @Test(arguments: FuzzTargets.all.map(\.name))
        func corpusAndMutations(target name: String) throws {
            let target = try #require(FuzzTargets.named(name))
            let seeds = try Self.seeds(of: name)
            #expect(seeds.count >= 3, "Tests/Fuzz/corpus/\(name) needs seeds")

            var outcomes: [FuzzOutcome] = []
            for seed in seeds {
                do { outcomes.append(try target.run(seed.bytes)) } catch {
                    Issue.record("seed \(seed.name): \(error)")
                }
            }
            // Seeds on both sides of the parser, or the properties are only ever checked on one path.
            #expect(outcomes.contains(.accepted), "no seed of \(name) is accepted")
            #expect(outcomes.contains(.rejected), "no seed of \(name) is rejected")

            // Seeded from the target's name: the same inputs on every run and machine.
            var mutator = FuzzMutator(
                seeds: seeds.map(\.bytes),
                seed: name.utf8.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 })
            var accepted = 0
            var violations = 0
            for _ in 0..<Self.mutationsPerTarget {
                let input = mutator.next()
                do {
                    if try target.run(input) == .accepted { accepted += 1 }
                } catch {
                    violations += 1
                    if violations <= 3 {
                        Issue.record(
                            "\(error)\ninput (\(input.count) bytes): \(String(decoding: input, as: UTF8.self).debugDescription)"
                        )
                    }
                }
            }
            #expect(violations == 0, "\(violations) of \(Self.mutationsPerTarget) mutated inputs broke a property")
            #expect(accepted > 0, "no mutated input of \(name) was accepted")
        }

        // The crashes the targets found in Retry-After and the installation token are regression
        // tests of RCNetworkTests (RetryAfterTests, InstallationTokenTests).

        /// DocumentReader looked for the bytes `"conditions"` to decide whether to evaluate conditions, so
        /// a key written with an escape (`"condition\u0073"`) made it ignore them.
        @Test func escapedConditionsKeyIsStillEvaluated() throws {
            let template = #"""
                {"parameters": {"a": {"defaultValue": {"value": "default"},
                  "conditionalValues": {"always": {"value": "conditional"}}}},
                 "condition\u0073": [{"name": "always", "condition": {"true": {}}}]}
                """#
            let reader = DocumentReader(deviceId: "device", signals: [], log: Logger { _ in })
            let document = try reader.read(Array(template.utf8), name: "remote.json")
            #expect(document == .update(values: ["a": "conditional"], templateVersion: nil))
        }
    }
}
