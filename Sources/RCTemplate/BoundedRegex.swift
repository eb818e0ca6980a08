internal import CLazyLibraries
internal import CPCRE2

/// A regular expression from a template (`STRING_CONTAINS_REGEX`), matched with a bounded cost.
///
/// Patterns come from whoever publishes the template, and backtracking engines (Swift's `Regex`,
/// JavaScript's, PCRE without limits) take time exponential in the subject for patterns such as
/// `^(a+)+$`: one template would keep every device of a fleet busy, fetch after fetch. PCRE2 takes
/// limits: a match that needs more than ``matchLimit`` steps or ``heapLimitKiB`` of backtracking memory
/// is abandoned and counts as no match. Its syntax is Perl's, the closest to the JavaScript RegExp
/// of the Admin SDK's evaluator (`\d`, `\w`, `\s` ASCII-only as in JavaScript, lookaheads, lazy
/// quantifiers); subjects and patterns are matched as UTF-8 code points.
final class BoundedRegex {
    /// Steps one match may take: far more than any sensible pattern needs on a 500-character
    /// signal value (Firebase's limit), a fraction of a millisecond of work. A template holds at most
    /// ``TemplateEvaluator/maximumRegexTargets`` patterns, so its regexes together stay bounded too.
    static let matchLimit: UInt32 = 10_000
    static let heapLimitKiB: UInt32 = 1024

    /// Why a match gave up: the pattern needs more work than the limits allow.
    struct LimitExceeded: Error {}

    private let code: OpaquePointer
    private let context: OpaquePointer
    private let matchData: OpaquePointer

    /// `nil` when the pattern does not compile (the condition is then false, as documented).
    /// Also `nil` without libpcre2-8 (loaded on first use; the package depends on it).
    init?(_ pattern: String) {
        guard rc_lazy_require(RC_LAZY_PCRE2) == nil else { return nil }
        var errorCode: Int32 = 0
        var errorOffset = 0
        let compiled =
            pattern.utf8.withContiguousStorageIfAvailable { bytes in
                pcre2_compile_8(
                    bytes.baseAddress, bytes.count, PCRE2_UTF, &errorCode, &errorOffset, nil)
            }
            ?? Array(pattern.utf8).withUnsafeBufferPointer { bytes in
                pcre2_compile_8(bytes.baseAddress, bytes.count, PCRE2_UTF, &errorCode, &errorOffset, nil)
            }
        guard let compiled else { return nil }
        guard let context = pcre2_match_context_create_8(nil),
            let matchData = pcre2_match_data_create_from_pattern_8(compiled, nil)
        else {
            pcre2_code_free_8(compiled)
            return nil
        }
        pcre2_set_match_limit_8(context, Self.matchLimit)
        pcre2_set_heap_limit_8(context, Self.heapLimitKiB)
        code = compiled
        self.context = context
        self.matchData = matchData
    }

    deinit {
        pcre2_match_data_free_8(matchData)
        pcre2_match_context_free_8(context)
        pcre2_code_free_8(code)
    }

    /// Whether the pattern matches anywhere in `subject`; throws when the limits stopped the search.
    func matches(_ subject: String) throws(LimitExceeded) -> Bool {
        var subject = subject
        let rc = subject.withUTF8 { bytes in
            // A NULL subject is refused by PCRE2 even with length 0: an empty one is passed as "".
            guard let base = bytes.baseAddress, !bytes.isEmpty else {
                return pcre2_match_8(code, "", 0, 0, 0, matchData, context)
            }
            return pcre2_match_8(code, base, bytes.count, 0, 0, matchData, context)
        }
        if rc >= 0 { return true }
        if rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT {
            throw LimitExceeded()
        }
        return false
    }
}
