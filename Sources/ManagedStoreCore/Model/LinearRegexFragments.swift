/// Building blocks of a `LinearRegex` program: the fragments the parser assembles.
///
/// A fragment is a run of instructions whose jumps stay inside it and whose exit is the index
/// just past its end. Jumps are relative, so fragments concatenate by appending and repeat by
/// copying, with no renumbering. Every operation checks the size it is about to create against
/// `LinearRegex.instructionLimit` first, so a pattern such as `((a{100}){100}){100}` is refused
/// before anything large is allocated.
enum LinearRegexFragments {
    typealias Fragment = [LinearRegex.Instruction]

    /// Throws unless `size` instructions are within the limit.
    static func check(_ size: Int, at position: Int) throws(LinearRegexError) {
        if size > LinearRegex.instructionLimit {
            throw LinearRegexError(kind: .programTooLarge(limit: LinearRegex.instructionLimit), position: position)
        }
    }

    /// `a|b|c`: a split before each alternative but the last, a jump to the end after each.
    static func alternation(_ branches: [Fragment], at position: Int) throws(LinearRegexError) -> Fragment {
        guard branches.count > 1 else { return branches.first ?? [] }
        try check(branches.reduce(0) { $0 + $1.count } + 2 * (branches.count - 1), at: position)
        var remaining = branches.reduce(0) { $0 + $1.count } + 2 * (branches.count - 1)
        var result = Fragment()
        result.reserveCapacity(remaining)
        for (i, branch) in branches.enumerated() {
            if i == branches.count - 1 {
                result += branch
            } else {
                // split: into this branch, or over it and its jump to the next split.
                result.append(.split(1, Int32(branch.count + 2)))
                result += branch
                remaining -= branch.count + 2
                // The jump lands just past the whole alternation.
                result.append(.jump(Int32(remaining + 1)))
            }
        }
        return result
    }

    /// `body{min,max}` (max nil: unbounded), greedy and lazy alike: only whether a match
    /// exists is computed, and both forms match the same strings.
    static func repetition(_ body: Fragment, min: Int, max: Int?, at position: Int) throws(LinearRegexError) -> Fragment {
        let size = body.count
        // Counts are at most `countLimit` and bodies at most `instructionLimit`, so these
        // products fit easily in an Int; offsets are only made once the total is checked, so
        // they fit in an Int32.
        let total: Int
        if let max {
            total = size * min + (size + 1) * (max - min)
        } else {
            total = min == 0 ? size + 2 : size * min + 1
        }
        try check(total, at: position)
        var result = Fragment()
        result.reserveCapacity(total)
        guard let max else {
            if min == 0 {
                // L: split(body, exit); body; jump L
                result.append(.split(1, Int32(size + 2)))
                result += body
                result.append(.jump(Int32(-(size + 1))))
            } else {
                // body × min, the last copy looping back on itself: split(back to its start, exit).
                for _ in 0..<min { result += body }
                result.append(.split(Int32(-size), 1))
            }
            return result
        }
        for _ in 0..<min { result += body }
        // Optional copies nest: once one is skipped, the rest are skipped with it, so each
        // split jumps straight to the common exit.
        let optional = max - min
        for k in 0..<optional {
            let copiesLeft = optional - k
            result.append(.split(1, Int32(copiesLeft * (size + 1))))
            result += body
        }
        return result
    }

    /// A unit that, like ICU, takes CR LF as one: `\r\n`, a lone `\r` not before `\n`, or one
    /// scalar of `otherSet` (which must not contain CR). Used for `\R` and `(?s).`.
    static func crlfUnit(otherSet: Int) -> Fragment {
        [
            .split(1, 3),
            .set(Int32(otherSet)),
            .jump(6),
            .scalar("\r"),
            .split(1, 3),
            .scalar("\n"),
            .jump(2),
            .assert(.notBeforeLineFeed),
        ]
    }
}
