package bundle

import (
	"errors"
	"strings"
	"testing"
)

// confirmManifest is a berth.json whose server reads MODE (from
// ACME_MODE) and whose importedFrom has inputs.
func confirmManifest(inputs ...map[string]any) map[string]any {
	return map[string]any{
		"manifestVersion": 1, "name": "acme", "version": "1.0.0", "description": "d",
		"mcpServers": map[string]any{"s": map[string]any{"stdio": map[string]any{
			"command": "node", "args": []string{"${bundle}/berth.json"},
			"env": map[string]any{"MODE": map[string]any{"fromEnv": "ACME_MODE"}, "NODE_ENV": map[string]any{"fromEnv": "ACME_NODE_ENV"}, "ACME_TOKEN": map[string]any{"fromEnv": "ACME_T"}},
		}}},
		"importedFrom": map[string]any{"format": "mcpb", "manifest": "berth.json", "inputs": inputs},
	}
}

func TestConfirmInputs(t *testing.T) {
	ok := map[string]any{"name": "env.MODE", "fromEnv": "ACME_MODE", "default": "fast", "choices": []string{"fast", "slow"}, "confirm": true, "becomes": "b"}
	env := map[string]any{"name": "env.NODE_ENV", "fromEnv": "ACME_NODE_ENV", "default": "production", "confirm": true, "becomes": "b"}
	b, err := openManifest(t, confirmManifest(ok, env))
	if err != nil {
		t.Fatalf("a valid confirm input (and NODE_ENV, which changes no code node runs) is refused: %v", err)
	}
	if got := b.Manifest.ConfirmInputs(); len(got) != 2 || got[0].FromEnv != "ACME_MODE" {
		t.Errorf("ConfirmInputs = %+v", got)
	}

	bad := []struct {
		in   map[string]any
		path string
	}{
		{map[string]any{"name": "x", "fromEnv": "ACME_MODE", "sensitive": true, "confirm": true, "becomes": "b"}, "importedFrom.inputs[0].confirm"},
		{map[string]any{"name": "x", "fromEnv": "NOBODY", "default": "a", "confirm": true, "becomes": "b"}, "importedFrom.inputs[0].fromEnv"},
		{map[string]any{"name": "x", "fromEnv": "ACME_T", "default": "a", "confirm": true, "becomes": "b"}, "importedFrom.inputs[0].default"},
		{map[string]any{"name": "x", "fromEnv": "ACME_MODE", "default": "ghp_abcdefghijklmnop", "confirm": true, "becomes": "b"}, "importedFrom.inputs[0].default"},
		{map[string]any{"name": "x", "fromEnv": "ACME_MODE", "default": "turbo", "choices": []string{"fast"}, "confirm": true, "becomes": "b"}, "importedFrom.inputs[0].default"},
	}
	for _, c := range bad {
		_, err := openManifest(t, confirmManifest(c.in))
		var ie *InvalidError
		if !errors.As(err, &ie) {
			t.Errorf("%v: %v, want refused", c.in, err)
			continue
		}
		found := false
		for _, p := range ie.Problems {
			found = found || (p.Rule == RuleConfirmInput && p.Path == c.path)
			if strings.Contains(p.Message, "ghp_abc") {
				t.Errorf("the problem shows the value: %s", p.Message)
			}
		}
		if !found {
			t.Errorf("%v: %v, want %s at %s", c.in, err, RuleConfirmInput, c.path)
		}
	}
	// One variable both confirmed and read from the environment.
	plain := map[string]any{"name": "y", "fromEnv": "ACME_MODE", "becomes": "b"}
	if _, err := openManifest(t, confirmManifest(ok, plain)); err == nil || !strings.Contains(err.Error(), RuleConfirmInput) {
		t.Errorf("a variable both confirmed and read from the environment: %v", err)
	}
}

// NODE_ENV and PYTHONUNBUFFERED are allowed by name only; the rest of
// NODE_* and PYTHON* stays refused.
func TestAllowedEnvKeys(t *testing.T) {
	for _, k := range []string{"NODE_ENV", "node_env", "PYTHONUNBUFFERED"} {
		if why, bad := EnvKeyForbidden(k); bad {
			t.Errorf("%s refused: %s", k, why)
		}
	}
	for _, k := range []string{"NODE_OPTIONS", "NODE_ENVX", "NODE_PATH", "PYTHONSTARTUP", "PYTHONUNBUFFEREDX", "LD_PRELOAD", "NPM_CONFIG_REGISTRY"} {
		if _, bad := EnvKeyForbidden(k); !bad {
			t.Errorf("%s allowed", k)
		}
	}
}

func TestCheckConfirmedValue(t *testing.T) {
	in := ImportInput{FromEnv: "ACME_MODE", Choices: []string{"fast", "slow"}, Required: true}
	if err := CheckConfirmedValue(in, "fast"); err != nil {
		t.Error(err)
	}
	num := ImportInput{FromEnv: "ACME_LIMIT", Type: "number"}
	for _, c := range []struct {
		in    ImportInput
		value string
	}{
		{in, "turbo"}, {in, ""}, {num, "ten"}, {ImportInput{FromEnv: "B", Type: "boolean"}, "yes"},
		{num, "1\x1b[2J"}, {ImportInput{FromEnv: "X"}, "sk-abcdef"}, {ImportInput{FromEnv: "X"}, strings.Repeat("a", MaxConfirmedValue+1)},
	} {
		err := CheckConfirmedValue(c.in, c.value)
		if err == nil {
			t.Errorf("CheckConfirmedValue(%+v, %q) = nil", c.in, c.value)
		} else if c.value != "" && strings.Contains(err.Error(), c.value) {
			t.Errorf("the error shows the value: %v", err)
		}
	}
	if err := CheckConfirmedValue(num, ""); err != nil {
		t.Errorf("an optional input left empty: %v", err)
	}
}
