package main

import (
	"encoding/base64"
	"path"
	"strings"

	"github.com/gobwas/glob"
)

// files is Helm's .Files: the chart's non-template files, by slash path.
type files map[string][]byte

func newFiles(fs []chartFile) files {
	f := files{}
	for _, cf := range fs {
		f[cf.Name] = cf.Data
	}
	return f
}

// GetBytes returns a file's bytes, or nil when there is no such file.
func (f files) GetBytes(name string) []byte {
	if v, ok := f[name]; ok {
		return v
	}
	return nil
}

// Get returns a file's content as a string, "" when there is no such file.
func (f files) Get(name string) string { return string(f.GetBytes(name)) }

// Glob returns the files whose path matches a gobwas glob (`*` stops at "/", `**` crosses it).
func (f files) Glob(pattern string) files {
	g, err := glob.Compile(pattern, '/')
	if err != nil {
		g, _ = glob.Compile("**")
	}
	nf := files{}
	for name, contents := range f {
		if g.Match(name) {
			nf[name] = contents
		}
	}
	return nf
}

// AsConfig renders the files as ConfigMap data: base name to content.
func (f files) AsConfig() string {
	if f == nil {
		return ""
	}
	m := make(map[string]string)
	for k, v := range f {
		m[path.Base(k)] = string(v)
	}
	return toYAML(m)
}

// AsSecrets renders the files as Secret data: base name to base64 content.
func (f files) AsSecrets() string {
	if f == nil {
		return ""
	}
	m := make(map[string]string)
	for k, v := range f {
		m[path.Base(k)] = base64.StdEncoding.EncodeToString(v)
	}
	return toYAML(m)
}

// Lines splits a file into lines, without a trailing empty line.
func (f files) Lines(p string) []string {
	if f == nil || f[p] == nil {
		return []string{}
	}
	s := string(f[p])
	if s != "" && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	return strings.Split(s, "\n")
}
