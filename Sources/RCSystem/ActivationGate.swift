import RCCore

/// Whether a fetched snapshot may become active now (SPEC: safe activation), as a plain value: outside
/// every maintenance window, or while a hold younger than `HoldLimit=` runs, it is deferred; an
/// explicit `activate --now` (or a push carrying `"activate": "now"`) overrides both. Forgotten holds
/// (``HoldPolicy/Verdict/expired(_:)``) defer nothing; the caller says so once.
public enum ActivationGate {
    /// What holds the activation back.
    public enum Reason: String, Sendable, Equatable {
        case window, hold
    }

    public enum Decision: Sendable, Equatable {
        case activate
        /// Deferred; `until` is when it is due (a window opens, a hold reaches its limit; `nil` when
        /// that is not known: a hold ends when its command does), `why` the later of the two.
        case deferred(until: Timestamp?, why: Reason)
    }

    public static func decide(
        at now: Timestamp, windows: WindowSchedule, holds: HoldPolicy.Verdict, now override: Bool = false
    ) -> Decision {
        if override { return .activate }
        let opening = windows.nextOpening(after: now)
        let windowOpen = opening == now
        switch holds {
        case .free, .expired:
            return windowOpen ? .activate : .deferred(until: opening, why: .window)
        case let .held(until):
            if windowOpen { return .deferred(until: until, why: .hold) }
            // Both: whichever ends later decides (an unknown end is the later one).
            guard let until, let opening else { return .deferred(until: nil, why: until == nil ? .hold : .window) }
            return until > opening ? .deferred(until: until, why: .hold) : .deferred(until: opening, why: .window)
        }
    }
}
