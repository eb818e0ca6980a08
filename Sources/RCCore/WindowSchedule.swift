/// The `[Activation] Window=` lines together. Whether a snapshot may become active now, and when the
/// next window opens, are answered by RCSystem (`isOpen(at:)`, `nextOpening(after:)`), over the C
/// library's zone rules.
public struct WindowSchedule: Sendable, Equatable {
    public var windows: [MaintenanceWindow]

    public init(_ windows: [MaintenanceWindow] = []) { self.windows = windows }

    /// No `Window=`: any time is inside.
    public var isUnrestricted: Bool { windows.isEmpty }
}
