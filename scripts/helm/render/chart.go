package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Metadata mirrors Helm's chart.Metadata: templates read it as .Chart.Name, .Chart.AppVersion, ...
type Metadata struct {
	Name         string            `json:"name,omitempty"`
	Home         string            `json:"home,omitempty"`
	Sources      []string          `json:"sources,omitempty"`
	Version      string            `json:"version,omitempty"`
	Description  string            `json:"description,omitempty"`
	Keywords     []string          `json:"keywords,omitempty"`
	Maintainers  []*Maintainer     `json:"maintainers,omitempty"`
	Icon         string            `json:"icon,omitempty"`
	APIVersion   string            `json:"apiVersion,omitempty"`
	Condition    string            `json:"condition,omitempty"`
	Tags         string            `json:"tags,omitempty"`
	AppVersion   string            `json:"appVersion,omitempty"`
	Deprecated   bool              `json:"deprecated,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	KubeVersion  string            `json:"kubeVersion,omitempty"`
	Dependencies []interface{}     `json:"dependencies,omitempty"`
	Type         string            `json:"type,omitempty"`
}

type Maintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

type chartFile struct {
	Name string // slash-separated, relative to the chart root
	Data []byte
}

type chart struct {
	Metadata  *Metadata
	Values    map[string]interface{}
	Templates []chartFile // templates/**
	CRDs      []chartFile // crds/*.yaml|yml|json
	Files     []chartFile // everything else Helm exposes as .Files
}

// loadChart reads a chart directory as Helm's loader.LoadDir does, honouring .helmignore.
func loadChart(dir string) (*chart, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a chart directory (packaged charts are not supported)", dir)
	}
	rules, err := loadIgnore(filepath.Join(dir, ".helmignore"))
	if err != nil {
		return nil, err
	}
	ch := &chart{Values: map[string]interface{}{}}
	var chartYAML []byte
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			return walkErr
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		name := filepath.ToSlash(rel)
		if rules.ignored(name, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: only regular files may be in a chart", name)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case name == "Chart.yaml":
			chartYAML = data
		case name == "values.yaml":
			if ch.Values, err = readValues(data); err != nil {
				return fmt.Errorf("cannot load values.yaml: %w", err)
			}
		case name == "values.schema.json":
			return fmt.Errorf("values.schema.json is not supported by this renderer (it would be silently skipped)")
		case name == "requirements.yaml" || name == "Chart.lock" || strings.HasPrefix(name, "charts/"):
			return fmt.Errorf("%s: subcharts and dependencies are not supported by this renderer", name)
		case strings.HasPrefix(name, "templates/"):
			ch.Templates = append(ch.Templates, chartFile{name, data})
		default:
			if strings.HasPrefix(name, "crds/") {
				ext := path.Ext(name)
				if ext == ".yaml" || ext == ".yml" || ext == ".json" {
					ch.CRDs = append(ch.CRDs, chartFile{name, data})
				}
			}
			// As in Helm, crds/ files are also visible through .Files.
			ch.Files = append(ch.Files, chartFile{name, data})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if chartYAML == nil {
		return nil, fmt.Errorf("%s: Chart.yaml file is missing", dir)
	}
	md := &Metadata{}
	if err := yaml.Unmarshal(chartYAML, md); err != nil {
		return nil, fmt.Errorf("cannot load Chart.yaml: %w", err)
	}
	if err := validateMetadata(md); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %w", err)
	}
	ch.Metadata = md
	sort.Slice(ch.CRDs, func(i, j int) bool { return ch.CRDs[i].Name < ch.CRDs[j].Name })
	return ch, nil
}

func validateMetadata(md *Metadata) error {
	switch {
	case md.APIVersion == "":
		return fmt.Errorf("apiVersion is required")
	case md.APIVersion != "v2":
		return fmt.Errorf("apiVersion %q is not supported (only v2)", md.APIVersion)
	case md.Name == "":
		return fmt.Errorf("name is required")
	case md.Version == "":
		return fmt.Errorf("version is required")
	case len(md.Dependencies) > 0:
		return fmt.Errorf("dependencies are not supported by this renderer")
	case md.Type != "" && md.Type != "application":
		return fmt.Errorf("chart type %q cannot be rendered (only application)", md.Type)
	}
	if _, err := parseSemver(md.Version); err != nil {
		return fmt.Errorf("version %q is invalid: %w", md.Version, err)
	}
	return nil
}

// ignoreRules is the subset of .helmignore Helm documents: globs matched against the path and the
// base name, "dir/" rules matching directories only, "!" negation, and comments.
type ignoreRule struct {
	pattern string
	dirOnly bool
	negate  bool
}

type ignoreRules []ignoreRule

func loadIgnore(file string) (ignoreRules, error) {
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return defaultIgnore(), nil
	}
	if err != nil {
		return nil, err
	}
	rules := defaultIgnore()
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.Contains(line, "**") {
			return nil, fmt.Errorf(".helmignore line %d: double-star (**) syntax is not supported by Helm", i+1)
		}
		r := ignoreRule{}
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimSuffix(line, "/")
		}
		r.pattern = strings.TrimPrefix(line, "/")
		if _, err := path.Match(r.pattern, ""); err != nil {
			return nil, fmt.Errorf(".helmignore line %d: %w", i+1, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// Helm always ignores hidden files under templates/.
func defaultIgnore() ignoreRules {
	return ignoreRules{{pattern: "templates/.?*"}}
}

func (rs ignoreRules) ignored(name string, isDir bool) bool {
	ignored := false
	for _, r := range rs {
		if r.dirOnly && !isDir {
			continue
		}
		m, _ := path.Match(r.pattern, name)
		if !m && !strings.Contains(r.pattern, "/") {
			m, _ = path.Match(r.pattern, path.Base(name))
		}
		if m {
			ignored = !r.negate
		}
	}
	return ignored
}
