package launcher

import "testing"

func TestParseFDs(t *testing.T) {
	for v, want := range map[string]bool{
		"3,4,-1,-1": true, "5,6,7,8": true, "3,4,5": false, "": false, "a,b,c,d": false,
		"2,4,-1,-1": false, "-1,4,-1,-1": false, "3,4,-2,-1": false, "3,4,--1,-1": false, "3,4,-1,-1,": false, "3,4,5,6,7": false,
	} {
		if _, ok := parseFDs(v); ok != want {
			t.Errorf("parseFDs(%q) ok = %v, want %v", v, ok, want)
		}
	}
}

func FuzzParseFDs(f *testing.F) {
	for _, s := range []string{"3,4,-1,-1", "5,6,7,8", "", "3,4", "a,b,c,d", "-1,-1,-1,-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fds, ok := parseFDs(s)
		if !ok {
			return
		}
		if fds[0] < 3 || fds[1] < 3 || fds[2] < -1 || fds[3] < -1 {
			t.Errorf("parseFDs(%q) = %v", s, fds)
		}
	})
}

func FuzzSpec(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 'x', 1, 0, 0, 0, 1, 0, 0, 0, 'x', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &reader{b: b}
		r.u32()
		r.u32()
		r.bytes()
		r.strings()
		r.strings()
		r.bytes()
		r.strings() // read-only paths
	})
}
