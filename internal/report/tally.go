package report

// Tally sets Summary.Pass, Fail and Skipped from the cases. A case whose
// verdict is none of Pass, Fail or Skipped counts as a failure: a result that
// nobody classified must not let CI pass. ExitCode and Error are left alone;
// the runner decides them (a hang exits 3 whatever the counts say).
func (r *Report) Tally() {
	r.Summary.Pass, r.Summary.Fail, r.Summary.Skipped = countVerdicts(r.Cases)
}

func countVerdicts(cases []Case) (pass, fail, skipped int) {
	for i := range cases {
		switch verdictOf(&cases[i]) {
		case Pass:
			pass++
		case Skipped:
			skipped++
		default:
			fail++
		}
	}
	return pass, fail, skipped
}

// verdictOf maps any verdict that is not Pass or Skipped to Fail, for the
// writers and Tally alike.
func verdictOf(c *Case) Verdict {
	switch c.Verdict {
	case Pass, Skipped:
		return c.Verdict
	}
	return Fail
}

// variantBlocks groups cases by variant, in the order each variant first
// appears, keeping the cases' order inside a group.
func variantBlocks(cases []Case) [][]*Case {
	index := map[string]int{}
	var blocks [][]*Case
	for i := range cases {
		c := &cases[i]
		b, ok := index[c.Variant]
		if !ok {
			b = len(blocks)
			index[c.Variant] = b
			blocks = append(blocks, nil)
		}
		blocks[b] = append(blocks[b], c)
	}
	return blocks
}
