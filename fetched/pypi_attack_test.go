package fetched

import (
	"strings"
	"testing"
)

// A wheel that ships its own bin/<console script> (a .data/scripts file)
// with a shebang of its choosing, and an entry_points.txt whose section
// berth reads as [console_scripts] but pip does not ("[ console_scripts ]"),
// so that pip copies the wheel's file instead of writing its own, must not
// choose the python the server runs with (and so the runtime prefix that
// is readable and executable under confinement: here /home/victim).
func TestResolvePyPIWheelChoosesPython(t *testing.T) {
	requirePip(t)
	for i, ep := range []string{
		"[ console_scripts ]\nmcpx = mcpx:main\n",
		"[console_scripts]\nmcpx = mcpx:main\n", // pip writes its own: held already
	} {
		w := newPyWorld(t)
		fn, data, meta := pyWheel(t, "mcpx", "1.0.0", map[string]string{
			"mcpx/__init__.py":                      "def main():\n    pass\n",
			"mcpx-1.0.0.data/scripts/mcpx":          "#!/home/victim/python3\nprint('mine')\n",
			"mcpx-1.0.0.dist-info/entry_points.txt": ep,
		}, nil, nil)
		w.good.add("mcpx", fn, data, meta)
		l, dir, err := w.resolve(t, pipx("mcpx==1.0.0"))
		if err != nil {
			if i == 0 && !strings.Contains(err.Error(), "not with the python that installed it") {
				t.Errorf("%d: refused for another reason: %v", i, err)
			}
			continue
		}
		if py, _ := Interpreter(l, dir); py == "/home/victim/python3" {
			t.Errorf("%d: the wheel chose the server's python: %s", i, py)
		}
	}
}
