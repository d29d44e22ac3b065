// SPDX-License-Identifier: GPL-2.0

// cos-nri: an NRI plugin that puts a pod annotated io.cos.policy under a cos lord, where the
// container runtime reads no OCI hooks directory (containerd, so a Kubernetes node).  See
// docs/operating.md, "Kubernetes".
//
// At CreateContainer, a container whose pod carries io.cos.* annotations gets them as its
// own annotations and cos-oci-hook as its createRuntime hook.  The hook then does for the
// container what it does under podman or CRI-O (checks, the class, the CPUs, SCHED_EXT for its
// first process): one code path for every runtime.  A bad annotation or a missing lord fails
// the container's start (runc runs the hook) with the hook's reason, so a pod never runs
// outside the policy it asked for.  Pods without io.cos.* annotations and the sandboxes are
// left as they are.
//
// The hook gets the pod's namespace as --pod-namespace, from the runtime's own record of the
// pod (never from an annotation, which the pod's author writes), for the operator's rules of
// which containers may join which enclave (--config, passed on).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/syslog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

// version is set by the Makefile (-ldflags -X main.version=...).
var version = "unknown"

const usage = `usage: cos-nri [OPTION]...

An NRI plugin for containerd (and CRI-O): a container of a pod annotated io.cos.policy=NAME
runs under the cos lord NAME.  It passes the pod's io.cos.* annotations (io.cos.policy,
io.cos.class, io.cos.enclave; see cos-oci-hook --help) to the container and runs cos-oci-hook
at its createRuntime stage, which fails the container if the lord is not there.

options:
  --socket PATH   the runtime's NRI socket (default: /var/run/nri/nri.sock); not needed when
                  the runtime starts the plugin itself (installed as /opt/nri/plugins/NN-cos)
  --hook PATH     the hook to run (default: cos-oci-hook beside this program)
  --config PATH   the rules the hook applies: which pods may join which enclave, and the
                  best class each may ask for (default: the hook's, /etc/cos/containers.json)
  --name NAME     the plugin's name for the runtime (default: cos)
  --idx NN        its index, two digits, the order among plugins (default: 50); both are
                  the file's name when the runtime starts the plugin
  -h, --help      this text
  -V, --version   the version

It says what it does to each container on stderr and to syslog (a runtime that starts the
plugin drops its stderr).  Exit status: 0 when the runtime closed the connection, 1 on an
error, 2 on bad usage.
`

type plugin struct {
	hook, config string
}

// journal is syslog, where there is one: a runtime that starts the plugin drops its stderr.
var journal *syslog.Writer

// logf says what the plugin did, on stderr and to syslog.
func logf(format string, a ...interface{}) {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(os.Stderr, "cos-nri: %s\n", msg)
	if journal != nil {
		journal.Info(msg)
	}
}

// cosAnnotations returns the pod's io.cos.* annotations, nil when it has none.
func cosAnnotations(pod *api.PodSandbox) map[string]string {
	var ann map[string]string
	for k, v := range pod.GetAnnotations() {
		if strings.HasPrefix(k, "io.cos.") {
			if ann == nil {
				ann = map[string]string{}
			}
			ann[k] = v
		}
	}
	return ann
}

// Configure says which runtime the plugin serves; the events are those it handles.
func (p *plugin) Configure(_ context.Context, _, runtime, version string) (api.EventMask, error) {
	logf("connected to %s %s", runtime, version)
	return 0, nil
}

// CreateContainer adjusts a container of an annotated pod: its annotations and the hook.
func (p *plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	ann := cosAnnotations(pod)
	if ann == nil {
		return nil, nil, nil
	}
	adjust := &api.ContainerAdjustment{}
	keys := make([]string, 0, len(ann))
	for k := range ann {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// Set, which replaces one the container's spec may carry.  Not removed first: the
		// runtime applies an adjustment's keys in map order, and a removal applied after
		// the addition would drop the annotation.
		adjust.AddAnnotation(k, ann[k])
	}
	// the namespace from the runtime, for the rules; the pod's author cannot write a hook's args
	args := []string{p.hook}
	if ns := pod.GetNamespace(); ns != "" {
		args = append(args, "--pod-namespace", ns)
	}
	if p.config != "" {
		args = append(args, "--config", p.config)
	}
	adjust.AddHooks(&api.Hooks{CreateRuntime: []*api.Hook{{Path: p.hook, Args: args}}})
	logf("%s/%s/%s: %s, with %s at createRuntime", pod.GetNamespace(), pod.GetName(),
		ctr.GetName(), strings.Join(pairs(ann, keys), " "), p.hook)
	return adjust, nil, nil
}

func pairs(ann map[string]string, keys []string) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+ann[k])
	}
	return out
}

// args is the command line, checked: unknown options and missing values are errors.
type args struct {
	socket, hook, config, name, idx string
	help, version           bool
}

func parse(argv []string) (args, error) {
	a := args{name: "cos", idx: "50"}
	for i := 0; i < len(argv); i++ {
		opt, val, hasVal := strings.Cut(argv[i], "=")
		var dst *string
		switch opt {
		case "-h", "--help":
			a.help = true
			continue
		case "-V", "--version":
			a.version = true
			continue
		case "--socket":
			dst = &a.socket
		case "--hook":
			dst = &a.hook
		case "--config":
			dst = &a.config
		case "--name":
			dst = &a.name
		case "--idx":
			dst = &a.idx
		default:
			return a, fmt.Errorf("unknown option '%s'", argv[i])
		}
		if !hasVal {
			if i+1 == len(argv) {
				return a, fmt.Errorf("option '%s' needs a value", opt)
			}
			i++
			val = argv[i]
		}
		if val == "" {
			return a, fmt.Errorf("option '%s': an empty value", opt)
		}
		*dst = val
	}
	if len(a.idx) != 2 || a.idx[0] < '0' || a.idx[0] > '9' || a.idx[1] < '0' || a.idx[1] > '9' {
		return a, fmt.Errorf("--idx '%s': not two digits", a.idx)
	}
	return a, nil
}

// hookPath is the hook to run: @given, or cos-oci-hook beside this program; it must be an
// executable file (the runtime would fail every annotated container otherwise).
func hookPath(given string) (string, error) {
	path := given
	if path == "" {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("where this program is: %v (use --hook)", err)
		}
		path = filepath.Join(filepath.Dir(self), "cos-oci-hook")
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("the hook: %v", err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("the hook %s is not an executable file", path)
	}
	return path, nil
}

func main() {
	a, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "cos-nri: %v (see cos-nri --help)\n", err)
		os.Exit(2)
	}
	if a.help {
		fmt.Print(usage)
		return
	}
	if a.version {
		fmt.Printf("cos-nri %s\n", version)
		return
	}
	journal, _ = syslog.New(syslog.LOG_DAEMON|syslog.LOG_INFO, "cos-nri")
	p := &plugin{config: a.config}
	if p.hook, err = hookPath(a.hook); err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	opts := []stub.Option{
		stub.WithOnClose(func() { logf("the runtime closed the connection") })}
	// started by the runtime from its plugin directory: the name and index are the file's
	if os.Getenv(api.PluginNameEnvVar) == "" {
		opts = append(opts, stub.WithPluginName(a.name))
	}
	if os.Getenv(api.PluginIdxEnvVar) == "" {
		opts = append(opts, stub.WithPluginIdx(a.idx))
	}
	if a.socket != "" {
		opts = append(opts, stub.WithSocketPath(a.socket))
	}
	s, err := stub.New(p, opts...)
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	if p.config != "" {
		if p.config, err = filepath.Abs(p.config); err != nil {
			logf("--config: %v", err)
			os.Exit(1)
		}
	}
	logf("%s, hook %s", version, p.hook)
	if err := s.Run(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		logf("%v", err)
		os.Exit(1)
	}
}
