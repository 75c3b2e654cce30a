package cuda

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestHopperPTXWgmmaOrder holds kernels_sm90a.ptx to the PTX ISA's rules
// for wgmma.mma_async that the kernel emulator cannot see (its fences are
// no-ops and its wgmma performed at the wait): checkWgmmaOrder on every
// kernel, and each gemm_3xtf32 kernel issues its 12 wgmma, commits and
// waits (so that the check is not vacuous). checkWgmmaOrder itself must
// find each violation in a small hand-written kernel.
func TestHopperPTXWgmmaOrder(t *testing.T) {
	for _, p := range checkWgmmaOrder(hopperPTX) {
		t.Errorf("kernels_sm90a.ptx: %s", p)
	}
	for _, name := range []string{"gemm_3xtf32", "gemm_3xtf32_serial", "gemm_3xtf32_every2", "gemm_3xtf32_split"} {
		body := ptxEntries(hopperPTX)[name]
		for op, want := range map[string]int{"wgmma.mma_async": 12, "wgmma.fence": 1, "wgmma.commit_group": 1, "wgmma.wait_group": 1, "fence.proxy.async": 2} {
			if got := strings.Count(body, op); got != want {
				t.Errorf("%s: %d %s, want %d", name, got, op, want)
			}
		}
	}

	const head = ".visible .entry k(\n)\n{\n"
	wgmma := "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%f1, %f2}, %rd1, %rd2, p, 1, 1;\n"
	good := "st.shared.v4.b32 [%r1], {%r2, %r3, %r4, %r5};\nfence.proxy.async.shared::cta;\nbar.sync 0;\nmov.f32 %f1, 0f00000000;\n" +
		"wgmma.fence.sync.aligned;\n" + wgmma + wgmma + "wgmma.commit_group.sync.aligned;\n" +
		"st.shared.v4.b32 [%r6], {%r2, %r3, %r4, %r5};\nfence.proxy.async.shared::cta;\n" +
		"wgmma.wait_group.sync.aligned 0;\nadd.rn.f32 %f9, %f9, %f1;\nbar.sync 0;\nret;\n}\n"
	if p := checkWgmmaOrder(head + good); len(p) != 0 {
		t.Errorf("a legal kernel: %v", p)
	}
	for _, c := range []struct{ what, from, to, want string }{
		{"the accumulator read before the wait", "wgmma.wait_group.sync.aligned 0;\nadd.rn.f32 %f9, %f9, %f1;", "add.rn.f32 %f9, %f9, %f1;\nwgmma.wait_group.sync.aligned 0;", "before wgmma.wait_group"},
		{"no wgmma.fence", "wgmma.fence.sync.aligned;\n", "", "without a wgmma.fence"},
		{"the accumulator written after the fence", "mov.f32 %f1, 0f00000000;\nwgmma.fence.sync.aligned;", "wgmma.fence.sync.aligned;\nmov.f32 %f1, 0f00000000;", "without a wgmma.fence"},
		{"stores not fenced before the barrier", "fence.proxy.async.shared::cta;\nbar.sync 0;\nmov", "bar.sync 0;\nmov", "no fence.proxy.async"},
		{"stores not fenced before the wait's barrier", "fence.proxy.async.shared::cta;\nwgmma.wait", "wgmma.wait", "no fence.proxy.async"},
		{"never waited for", "wgmma.wait_group.sync.aligned 0;\n", "", "not waited for"},
		{"waited for but not committed", "wgmma.commit_group.sync.aligned;\n", "", "not waited for"},
	} {
		bad := strings.Replace(good, c.from, c.to, 1)
		if bad == good {
			t.Fatalf("%s: the case does not change the kernel", c.what)
		}
		if p := checkWgmmaOrder(head + bad); !strings.Contains(strings.Join(p, "\n"), c.want) {
			t.Errorf("%s: checkWgmmaOrder found %q, want a problem saying %q", c.what, p, c.want)
		}
	}
}

// ptxEntries splits PTX into its kernels' bodies by name.
func ptxEntries(ptx string) map[string]string {
	out := map[string]string{}
	parts := strings.Split(ptx, ".visible .entry ")
	for _, p := range parts[1:] {
		name, _, _ := strings.Cut(p, "(")
		out[name] = p
	}
	return out
}

// checkWgmmaOrder lists where a kernel of ptx breaks the PTX ISA's rules
// for wgmma.mma_async (wgmma.fence, wgmma.commit_group and
// wgmma.wait_group; the async proxy), reading each kernel's instructions
// in the order they are written (each of our loops is one block of
// straight-line code but for short forward branches):
//   - a wgmma.fence precedes the first wgmma.mma_async after a wait, with
//     nothing but wgmma touching an accumulator register in between;
//   - from a wgmma.mma_async until a wgmma.wait_group 0 that follows its
//     commit_group, no other instruction names an accumulator register
//     (a register in a wgmma's output list);
//   - shared-memory stores (generic proxy) are followed by
//     fence.proxy.async.shared::cta before the next barrier and before the
//     next wgmma (async proxy);
//   - every wgmma is waited for before ret.
//
// A wait_group N > 0 leaves every wgmma in flight here (a kernel that
// keeps groups in flight across a wait would need a finer check), and the
// stores rule takes every st.shared for a wgmma operand, as in
// kernels_sm90a/.
func checkWgmmaOrder(ptx string) []string {
	var problems []string
	accList := regexp.MustCompile(`wgmma\.mma_async[^{]*\{([^}]*)\}`)
	fReg := regexp.MustCompile(`%f\d+`)
	for name, body := range ptxEntries(ptx) {
		acc := map[string]bool{}
		for _, m := range accList.FindAllStringSubmatch(body, -1) {
			for _, r := range fReg.FindAllString(m[1], -1) {
				acc[r] = true
			}
		}
		touches := func(line string) bool {
			for _, r := range fReg.FindAllString(line, -1) {
				if acc[r] {
					return true
				}
			}
			return false
		}
		fenced := false // a wgmma.fence since the last wait, with no accumulator access after it
		uncommitted, inFlight := false, false
		stored := false // st.shared since the last fence.proxy.async
		for i, line := range strings.Split(body, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "@") { // a predicated instruction
				_, line, _ = strings.Cut(line, " ")
				line = strings.TrimSpace(line)
			}
			where := func(what string) {
				problems = append(problems, fmt.Sprintf("%s line %d (%s): %s", name, i+1, line, what))
			}
			switch {
			case line == "" || strings.HasPrefix(line, "//"):
			case strings.HasPrefix(line, "wgmma.fence"):
				fenced = true
			case strings.HasPrefix(line, "wgmma.mma_async"):
				if !fenced {
					where("wgmma.mma_async without a wgmma.fence after the accumulator's last other use")
				}
				if stored {
					where("wgmma.mma_async after shared-memory stores with no fence.proxy.async")
				}
				uncommitted, inFlight = true, true
			case strings.HasPrefix(line, "wgmma.commit_group"):
				uncommitted = false
			case strings.HasPrefix(line, "wgmma.wait_group"):
				if strings.Contains(line, " 0;") && !uncommitted {
					inFlight, fenced = false, false
				}
			case strings.HasPrefix(line, "st.shared"):
				stored = true
			case strings.HasPrefix(line, "fence.proxy.async"):
				stored = false
			case strings.HasPrefix(line, "bar.sync") || strings.HasPrefix(line, "barrier.sync"):
				if stored {
					where("a barrier after shared-memory stores with no fence.proxy.async (the wgmma after it read them through the async proxy)")
				}
			case strings.HasPrefix(line, "ret"):
				if inFlight {
					where("wgmma not waited for (wgmma.wait_group 0 after its commit_group) before ret")
				}
			case touches(line):
				if inFlight {
					where("an accumulator register used before wgmma.wait_group 0")
				}
				fenced = false
			}
		}
	}
	return problems
}
