package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/Masterminds/semver"
	"sigs.k8s.io/yaml"
)

// readValues parses YAML values as Helm's chartutil.ReadValues does: through JSON, so every
// number becomes a float64 (the reason charts write `int .Values.x`).
func readValues(data []byte) (map[string]interface{}, error) {
	var vals map[string]interface{}
	if err := yaml.Unmarshal(data, &vals); err != nil {
		return nil, err
	}
	if vals == nil {
		vals = map[string]interface{}{}
	}
	return vals, nil
}

func parseSemver(v string) (*semver.Version, error) { return semver.NewVersion(v) }

// userValues merges -f files in order, then applies --set expressions, like Helm's
// values.Options.MergeValues.
func userValues(o *options) (map[string]interface{}, error) {
	base := map[string]interface{}{}
	for _, f := range o.valueFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		cur, err := readValues(data)
		if err != nil {
			return nil, fmt.Errorf("failed to parse %s: %w", f, err)
		}
		base = mergeMaps(base, cur)
	}
	for _, s := range o.sets {
		if err := parseSet(s.expr, base, s.asString); err != nil {
			return nil, fmt.Errorf("failed parsing --set data: %w", err)
		}
	}
	return base, nil
}

func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]interface{}); ok {
			if bv, ok := out[k].(map[string]interface{}); ok {
				out[k] = mergeMaps(bv, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// coalesceValues layers user values over the chart's defaults as Helm's chartutil.CoalesceValues
// does: maps merge key by key, anything else from the user wins, and a user null deletes the key.
func coalesceValues(chartVals, user map[string]interface{}) map[string]interface{} {
	out := deepCopyMap(user)
	coalesceTables(out, deepCopyMap(chartVals))
	return out
}

func coalesceTables(dst, src map[string]interface{}) {
	for key, val := range src {
		dv, ok := dst[key]
		switch {
		case ok && dv == nil:
			delete(dst, key)
		case !ok:
			dst[key] = val
		default:
			dm, dIsMap := dv.(map[string]interface{})
			sm, sIsMap := val.(map[string]interface{})
			if dIsMap && sIsMap {
				coalesceTables(dm, sm)
			} else if dIsMap != sIsMap && val != nil {
				fmt.Fprintf(os.Stderr, "coalesce.go: warning: cannot overwrite table with non table for %s (%v)\n", key, val)
			}
		}
	}
	// A user null for a key the chart does not have is dropped too.
	for key, v := range dst {
		if v == nil {
			if _, inSrc := src[key]; !inSrc {
				delete(dst, key)
			}
		}
	}
}

func deepCopyMap(m map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		return deepCopyMap(t)
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, e := range t {
			out[i] = deepCopyValue(e)
		}
		return out
	default:
		return v
	}
}

// parseSet implements Helm's strvals syntax: `a.b=c,d[0]=e,f={x,y}` with backslash escapes.
// Values are typed as Helm types them (int64, bool, nil) unless asString.
func parseSet(expr string, into map[string]interface{}, asString bool) error {
	p := &setParser{s: []rune(expr), asString: asString}
	for !p.done() {
		if err := p.assignment(into); err != nil {
			return fmt.Errorf("%s: %w", expr, err)
		}
		if !p.done() {
			if p.s[p.i] != ',' {
				return fmt.Errorf("%s: unexpected %q at position %d", expr, p.s[p.i], p.i)
			}
			p.i++
		}
	}
	return nil
}

type setParser struct {
	s        []rune
	i        int
	asString bool
}

func (p *setParser) done() bool { return p.i >= len(p.s) }

type keyPart struct {
	name  string
	index int // -1 for a map key
}

func (p *setParser) assignment(into map[string]interface{}) error {
	var parts []keyPart
	var cur strings.Builder
	for {
		if p.done() {
			return fmt.Errorf("key %q has no value", cur.String())
		}
		c := p.s[p.i]
		switch {
		case c == '\\' && p.i+1 < len(p.s):
			cur.WriteRune(p.s[p.i+1])
			p.i += 2
		case c == '.':
			if cur.Len() > 0 {
				parts = append(parts, keyPart{cur.String(), -1})
			}
			cur.Reset()
			p.i++
		case c == '[':
			if cur.Len() > 0 {
				parts = append(parts, keyPart{cur.String(), -1})
			}
			cur.Reset()
			end := strings.IndexRune(string(p.s[p.i:]), ']')
			if end < 0 {
				return fmt.Errorf("missing ] in key")
			}
			idx, err := strconv.Atoi(string(p.s[p.i+1 : p.i+end]))
			if err != nil || idx < 0 {
				return fmt.Errorf("invalid list index %q", string(p.s[p.i+1:p.i+end]))
			}
			parts = append(parts, keyPart{"", idx})
			p.i += end + 1
		case c == '=':
			if cur.Len() > 0 {
				parts = append(parts, keyPart{cur.String(), -1})
			}
			p.i++
			if len(parts) == 0 || parts[0].index >= 0 {
				return fmt.Errorf("a key must start with a name")
			}
			val, err := p.value()
			if err != nil {
				return err
			}
			return setPath(into, parts, val)
		case c == ',':
			return fmt.Errorf("key %q has no value", cur.String())
		default:
			cur.WriteRune(c)
			p.i++
		}
	}
}

func (p *setParser) value() (interface{}, error) {
	if !p.done() && p.s[p.i] == '{' {
		p.i++
		var list []interface{}
		var cur strings.Builder
		for {
			if p.done() {
				return nil, fmt.Errorf("list is missing its closing }")
			}
			c := p.s[p.i]
			p.i++
			switch {
			case c == '\\' && !p.done():
				cur.WriteRune(p.s[p.i])
				p.i++
			case c == ',' || c == '}':
				if cur.Len() > 0 || c == ',' || len(list) > 0 {
					list = append(list, typedVal(cur.String(), p.asString))
				}
				cur.Reset()
				if c == '}' {
					if list == nil {
						list = []interface{}{}
					}
					return list, nil
				}
			default:
				cur.WriteRune(c)
			}
		}
	}
	var cur strings.Builder
	for !p.done() && p.s[p.i] != ',' {
		if p.s[p.i] == '\\' && p.i+1 < len(p.s) {
			p.i++
		}
		cur.WriteRune(p.s[p.i])
		p.i++
	}
	return typedVal(cur.String(), p.asString), nil
}

func typedVal(val string, asString bool) interface{} {
	if asString {
		return val
	}
	switch {
	case strings.EqualFold(val, "true"):
		return true
	case strings.EqualFold(val, "false"):
		return false
	case strings.EqualFold(val, "null"):
		return nil
	case val == "0":
		return int64(0)
	}
	if len(val) != 0 && val[0] != '0' {
		if iv, err := strconv.ParseInt(val, 10, 64); err == nil {
			return iv
		}
	}
	return val
}

func setPath(into map[string]interface{}, parts []keyPart, val interface{}) error {
	var container interface{} = into
	set := func(c interface{}, k keyPart, v interface{}) (interface{}, error) {
		if k.index < 0 {
			m := c.(map[string]interface{})
			m[k.name] = v
			return m, nil
		}
		l, _ := c.([]interface{})
		for len(l) <= k.index {
			l = append(l, nil)
		}
		l[k.index] = v
		return l, nil
	}
	// Walk down, creating maps and lists as needed; lists are rebuilt on the way back up.
	var walk func(c interface{}, i int) (interface{}, error)
	walk = func(c interface{}, i int) (interface{}, error) {
		k := parts[i]
		if k.index < 0 {
			if _, ok := c.(map[string]interface{}); !ok {
				c = map[string]interface{}{}
			}
		} else if _, ok := c.([]interface{}); !ok && c != nil {
			return nil, fmt.Errorf("%s is not a list", k.name)
		}
		if i == len(parts)-1 {
			return set(c, k, val)
		}
		var child interface{}
		if k.index < 0 {
			child = c.(map[string]interface{})[k.name]
		} else if l, _ := c.([]interface{}); k.index < len(l) {
			child = l[k.index]
		}
		next, err := walk(child, i+1)
		if err != nil {
			return nil, err
		}
		return set(c, k, next)
	}
	_, err := walk(container, 0)
	return err
}
