import Testing

/// Every reliability scenario (`make test-reliability`), one at a time: they load the machine, and
/// one of them sets its clock, which every daemon running then hears of.
@Suite(.serialized) enum Reliability {}
