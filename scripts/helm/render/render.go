package main

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/Masterminds/semver"
	"sigs.k8s.io/yaml"
)

// KubeVersion, VersionSet and Capabilities mirror Helm's chartutil types.
type KubeVersion struct {
	Version string
	Major   string
	Minor   string
}

func (kv KubeVersion) String() string { return kv.Version }

// GitVersion is kept for templates written for Helm 2.
func (kv KubeVersion) GitVersion() string { return kv.Version }

type VersionSet []string

// Has reports whether a group/version (or group/version/Kind) is in the set.
func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

type BuildInfo struct {
	Version      string `json:"version,omitempty"`
	GitCommit    string `json:"git_commit,omitempty"`
	GitTreeState string `json:"git_tree_state,omitempty"`
	GoVersion    string `json:"go_version,omitempty"`
}

type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion BuildInfo
}

// The built-in group versions a Kubernetes 1.20 apiserver serves; --api-versions adds more
// (for example monitoring.coreos.com/v1 when the Prometheus Operator is installed).
var defaultAPIVersions = []string{
	"v1",
	"admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1beta1",
	"apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1",
	"apiregistration.k8s.io/v1", "apiregistration.k8s.io/v1beta1",
	"apps/v1",
	"authentication.k8s.io/v1", "authentication.k8s.io/v1beta1",
	"authorization.k8s.io/v1", "authorization.k8s.io/v1beta1",
	"autoscaling/v1", "autoscaling/v2beta1", "autoscaling/v2beta2",
	"batch/v1", "batch/v1beta1",
	"certificates.k8s.io/v1", "certificates.k8s.io/v1beta1",
	"coordination.k8s.io/v1", "coordination.k8s.io/v1beta1",
	"discovery.k8s.io/v1beta1",
	"events.k8s.io/v1", "events.k8s.io/v1beta1",
	"extensions/v1beta1",
	"flowcontrol.apiserver.k8s.io/v1beta1",
	"networking.k8s.io/v1", "networking.k8s.io/v1beta1",
	"node.k8s.io/v1", "node.k8s.io/v1beta1",
	"policy/v1beta1",
	"rbac.authorization.k8s.io/v1", "rbac.authorization.k8s.io/v1beta1",
	"scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1",
	"storage.k8s.io/v1", "storage.k8s.io/v1beta1",
}

func capabilities(o *options) (*Capabilities, error) {
	v, err := semver.NewVersion(o.kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("invalid --kube-version %q: %w", o.kubeVersion, err)
	}
	apis := append(VersionSet{}, defaultAPIVersions...)
	apis = append(apis, o.apiVersions...)
	return &Capabilities{
		KubeVersion: KubeVersion{Version: "v" + v.String(), Major: strconv.FormatUint(v.Major(), 10), Minor: strconv.FormatUint(v.Minor(), 10)},
		APIVersions: apis,
		HelmVersion: BuildInfo{Version: "v3.11.0", GitTreeState: "stowage-helm"},
	}, nil
}

func renderChart(ch *chart, o *options) (string, error) {
	user, err := userValues(o)
	if err != nil {
		return "", err
	}
	caps, err := capabilities(o)
	if err != nil {
		return "", err
	}
	if c := ch.Metadata.KubeVersion; c != "" {
		ok, err := compatibleRange(c, caps.KubeVersion.Version)
		if err != nil {
			return "", fmt.Errorf("Chart.yaml kubeVersion %q: %w", c, err)
		}
		if !ok {
			return "", fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", c, caps.KubeVersion.Version)
		}
	}
	name := ch.Metadata.Name
	top := map[string]interface{}{
		"Values": coalesceValues(ch.Values, user),
		"Release": map[string]interface{}{
			"Name":      o.releaseName,
			"Namespace": o.namespace,
			"IsUpgrade": o.isUpgrade,
			"IsInstall": !o.isUpgrade,
			"Revision":  o.revision,
			"Service":   "Helm",
		},
		"Chart":        ch.Metadata,
		"Capabilities": caps,
		"Files":        newFiles(ch.Files),
		"Subcharts":    map[string]interface{}{},
	}
	tpls := map[string]renderable{}
	for _, t := range ch.Templates {
		tpls[path.Join(name, t.Name)] = renderable{tpl: string(t.Data), vals: top, basePath: path.Join(name, "templates")}
	}
	rendered, err := engine{strict: o.strict}.render(tpls)
	if err != nil {
		return "", err
	}
	notesKey := path.Join(name, "templates", "NOTES.txt")
	notes := rendered[notesKey]
	for k := range rendered {
		if strings.HasSuffix(k, "NOTES.txt") {
			delete(rendered, k)
		}
	}
	if o.notes {
		return notes, nil
	}

	hooks, manifests, err := sortManifests(rendered)
	if err != nil {
		return "", err
	}
	if len(o.showOnly) > 0 {
		keep := map[string]bool{}
		for _, s := range o.showOnly {
			full := path.Join(name, s)
			found := false
			for _, m := range append(append([]manifest{}, manifests...), hooks...) {
				if m.Name == full {
					keep[full], found = true, true
				}
			}
			if !found {
				return "", fmt.Errorf("could not find template %s in chart", s)
			}
		}
		filter := func(ms []manifest) []manifest {
			var out []manifest
			for _, m := range ms {
				if keep[m.Name] {
					out = append(out, m)
				}
			}
			return out
		}
		manifests, hooks = filter(manifests), filter(hooks)
	}

	var b strings.Builder
	if o.includeCRDs && len(o.showOnly) == 0 {
		for _, crd := range ch.CRDs {
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", path.Join(name, crd.Name), string(crd.Data))
		}
	}
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	if !o.noHooks {
		for _, m := range hooks {
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
		}
	}
	return b.String(), nil
}

// compatibleRange is Helm's chartutil.IsCompatibleRange; pre-release kube versions are tested on
// their release part.
func compatibleRange(constraint, ver string) (bool, error) {
	sv, err := semver.NewVersion(ver)
	if err != nil {
		return false, err
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return false, err
	}
	return c.Check(sv), nil
}

type manifest struct {
	Name    string
	Content string
	Kind    string
	Weight  int
}

type simpleHead struct {
	Version  string `json:"apiVersion"`
	Kind     string `json:"kind,omitempty"`
	Metadata *struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata,omitempty"`
}

var sep = regexp.MustCompile("(?:^|\\s*\n)---\\s*")

// splitManifests is Helm's releaseutil.SplitManifests, returning documents in file order.
func splitManifests(bigFile string) []string {
	bigFileTmp := strings.TrimSpace(bigFile)
	docs := sep.Split(bigFileTmp, -1)
	var out []string
	for _, d := range docs {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// installOrder is Helm's releaseutil.InstallOrder.
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList",
	"RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController",
	"ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
	"IngressClass", "Ingress", "APIService",
}

// sortManifests is Helm's releaseutil.SortManifests: files in path order, documents in file
// order, each checked to be YAML; hooks (helm.sh/hook) apart; then a stable sort by kind.
func sortManifests(files map[string]string) (hooks, generic []manifest, err error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		// Partials and whitespace-only output produce no manifests; every other template does,
		// whatever its extension.
		if strings.HasPrefix(path.Base(p), "_") || strings.TrimSpace(files[p]) == "" {
			continue
		}
		for _, doc := range splitManifests(files[p]) {
			var head simpleHead
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				return nil, nil, fmt.Errorf("YAML parse error on %s: %w", p, err)
			}
			m := manifest{Name: p, Content: doc, Kind: head.Kind}
			if head.Metadata != nil && head.Metadata.Annotations["helm.sh/hook"] != "" {
				if w, err := strconv.Atoi(head.Metadata.Annotations["helm.sh/hook-weight"]); err == nil {
					m.Weight = w
				}
				hooks = append(hooks, m)
				continue
			}
			generic = append(generic, m)
		}
	}
	rank := map[string]int{}
	for i, k := range installOrder {
		rank[k] = i
	}
	sort.SliceStable(generic, func(i, j int) bool {
		a, b := generic[i].Kind, generic[j].Kind
		ra, aok := rank[a]
		rb, bok := rank[b]
		switch {
		case aok && bok:
			return ra < rb
		case aok != bok:
			return aok
		default:
			return a < b
		}
	})
	sort.SliceStable(hooks, func(i, j int) bool {
		if hooks[i].Weight == hooks[j].Weight {
			return hooks[i].Name < hooks[j].Name
		}
		return hooks[i].Weight < hooks[j].Weight
	})
	return hooks, generic, nil
}
