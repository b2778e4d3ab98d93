// Command stowage-helm renders a Helm 3 chart the way `helm template` does, for machines without a
// helm binary. It reimplements Helm's template engine on the same libraries Helm uses (Go
// text/template, sprig v3, sigs.k8s.io/yaml, BurntSushi/toml, gobwas/glob), taken from Debian's
// golang packages. Unsupported chart features (subcharts, values.schema.json) are refused rather
// than silently ignored. See scripts/helm/README.md for what is and is not supported.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

const usage = `Usage: stowage-helm template [RELEASE_NAME] CHART_DIR [flags]

Flags (as in helm template):
  -n, --namespace NS        release namespace (default "default")
  -f, --values FILE         values file; repeatable, later files win
      --set K=V[,K=V]       set values (typed like helm: ints, true/false, null, {a,b} lists)
      --set-string K=V      set string values
      --include-crds        print the chart's crds/ first
      --is-upgrade          set .Release.IsUpgrade (and IsInstall=false)
      --revision N          .Release.Revision (default 1)
      --kube-version V      .Capabilities.KubeVersion (default v1.20.2)
  -a, --api-versions GV     add to .Capabilities.APIVersions; repeatable
  -s, --show-only PATH      only this template (templates/x.yaml); repeatable
      --no-hooks            leave out hook manifests
      --strict              fail on missing map keys (missingkey=error)
      --notes               print the rendered NOTES.txt instead of the manifests
`

type options struct {
	releaseName string
	chartDir    string
	namespace   string
	valueFiles  []string
	sets        []setArg
	includeCRDs bool
	isUpgrade   bool
	revision    int
	kubeVersion string
	apiVersions []string
	showOnly    []string
	noHooks     bool
	strict      bool
	notes       bool
}

type setArg struct {
	expr     string
	asString bool
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %s\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Print(usage)
		return nil
	}
	if args[0] != "template" {
		return fmt.Errorf("unknown command %q (only \"template\" is supported)\n%s", args[0], usage)
	}
	opts, err := parseArgs(args[1:])
	if err != nil {
		return err
	}
	ch, err := loadChart(opts.chartDir)
	if err != nil {
		return err
	}
	out, err := renderChart(ch, opts)
	if err != nil {
		return err
	}
	_, err = os.Stdout.WriteString(out)
	return err
}

func parseArgs(args []string) (*options, error) {
	o := &options{namespace: "default", revision: 1, kubeVersion: "v1.20.2"}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name, value, hasValue := strings.Cut(a, "=")
		takeValue := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("flag %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		boolFlag := func() (bool, error) {
			if !hasValue {
				return true, nil
			}
			return strconv.ParseBool(value)
		}
		var err error
		switch name {
		case "-n", "--namespace":
			o.namespace, err = takeValue()
		case "-f", "--values":
			var v string
			v, err = takeValue()
			o.valueFiles = append(o.valueFiles, v)
		case "--set", "--set-string":
			var v string
			v, err = takeValue()
			o.sets = append(o.sets, setArg{expr: v, asString: name == "--set-string"})
		case "--include-crds":
			o.includeCRDs, err = boolFlag()
		case "--is-upgrade":
			o.isUpgrade, err = boolFlag()
		case "--no-hooks":
			o.noHooks, err = boolFlag()
		case "--strict":
			o.strict, err = boolFlag()
		case "--notes":
			o.notes, err = boolFlag()
		case "--revision":
			var v string
			if v, err = takeValue(); err == nil {
				o.revision, err = strconv.Atoi(v)
			}
		case "--kube-version":
			o.kubeVersion, err = takeValue()
		case "-a", "--api-versions":
			var v string
			v, err = takeValue()
			o.apiVersions = append(o.apiVersions, v)
		case "-s", "--show-only":
			var v string
			v, err = takeValue()
			o.showOnly = append(o.showOnly, v)
		default:
			return nil, fmt.Errorf("unknown flag %s\n%s", name, usage)
		}
		if err != nil {
			return nil, fmt.Errorf("flag %s: %w", name, err)
		}
	}
	switch len(positional) {
	case 1:
		o.releaseName, o.chartDir = "release-name", positional[0]
	case 2:
		o.releaseName, o.chartDir = positional[0], positional[1]
	default:
		return nil, errors.New("expected [RELEASE_NAME] CHART_DIR\n" + usage)
	}
	if err := validateReleaseName(o.releaseName); err != nil {
		return nil, err
	}
	return o, nil
}

// Helm's rule: a DNS-1123 label-like name of at most 53 characters (room for suffixes).
func validateReleaseName(name string) error {
	if len(name) == 0 || len(name) > 53 {
		return fmt.Errorf("invalid release name %q: must be 1 to 53 characters", name)
	}
	for i, r := range name {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || (r == '-' && i > 0 && i < len(name)-1) || (r == '.' && i > 0 && i < len(name)-1)
		if !ok {
			return fmt.Errorf("invalid release name %q: use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit", name)
		}
	}
	return nil
}
