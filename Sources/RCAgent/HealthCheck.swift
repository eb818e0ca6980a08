import RCCore
import RCService
import RCSystem

/// `[Activation] HealthCheck=`: the program run after an activation to say whether the device is
/// still healthy with the new values. It runs like a hook (``SupervisedProcess``: its own process
/// group, bounded output logged as `health check: ...`, killed at `HealthTimeout=`), with the hooks'
/// environment plus `RCAGENT_EVENT=health-check`, `RCAGENT_TEMPLATE_VERSION` (the version on trial)
/// and `RCAGENT_PREVIOUS_TEMPLATE_VERSION` (the one a failure goes back to), and an empty stdin.
struct HealthCheck: Sendable {
    /// The verdict, with the start of the output for the log and the event.
    struct Result: Sendable, Equatable {
        var verdict: HealthVerdict
        var output: String
    }

    let path: String
    let timeout: Duration

    /// Runs the check and waits for its verdict (a blocking call: run it off the cooperative pool).
    /// A check that cannot be started is a failure (exit 127 or 126, as a shell says it): a device
    /// whose health cannot be told is not known to be healthy.
    func run(templateVersion: String?, previousVersion: String?, log: Logger) -> Result {
        var environment = Environment.current()
        environment["RCAGENT_EVENT"] = "health-check"
        environment["RCAGENT_TEMPLATE_VERSION"] = templateVersion ?? ""
        environment["RCAGENT_PREVIOUS_TEMPLATE_VERSION"] = previousVersion ?? ""
        let (outcome, output) = SupervisedProcess.run(
            path, label: "health check", environment: environment, stdin: [], timeout: timeout, log: log)
        switch outcome {
        case .exited(0):
            return Result(verdict: .passed, output: output)
        case let .exited(code):
            log.warning("Health check \(path) exited with status \(code)")
            return Result(verdict: .failed(exitCode: code), output: output)
        case let .signaled(signal):
            log.warning("Health check \(path) was killed by signal \(signal)")
            return Result(verdict: .failed(exitCode: 128 + signal), output: output)
        case .timedOut:
            log.warning("Health check \(path) gave no verdict within \(DurationText.format(timeout)); killed")
            return Result(verdict: .timedOut, output: output)
        case let .notStarted(reason):
            log.error("Failed to run health check \(path): \(reason)")
            return Result(verdict: .failed(exitCode: reason.contains("No such file") ? 127 : 126), output: "")
        }
    }
}
