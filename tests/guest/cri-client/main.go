// SPDX-License-Identifier: GPL-2.0

// cri-client: the few CRI calls tests/guest/nri-test makes, as the kubelet would (Debian has no
// crictl).  A pod on the node's network (no CNI), one container in it.
//
//	cri-client --socket S run NAME IMAGE [KEY=VALUE...] -- CMD...
//	    RunPodSandbox (the KEY=VALUE pairs are its annotations), CreateContainer, StartContainer;
//	    prints "pod ID" and "container ID"; on a failure the call's error, the pod removed, exit 1
//	cri-client --socket S rm POD
//	    StopPodSandbox and RemovePodSandbox
//	cri-client --socket S version
//	    the runtime's name and version, once it serves CRI
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "cri-client: "+format+"\n", a...)
	os.Exit(1)
}

func main() {
	argv := os.Args[1:]
	if len(argv) < 3 || argv[0] != "--socket" {
		fmt.Fprintln(os.Stderr, "usage: cri-client --socket S run NAME IMAGE [KEY=VALUE...] -- CMD... | rm POD | version\n(the pod's namespace: $CRI_NAMESPACE, default cos-test)")
		os.Exit(2)
	}
	conn, err := grpc.NewClient("unix://"+argv[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail("%v", err)
	}
	defer conn.Close()
	rt := cri.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	switch argv[2] {
	case "version":
		v, err := rt.Version(ctx, &cri.VersionRequest{})
		if err != nil {
			fail("Version: %v", err)
		}
		fmt.Printf("%s %s\n", v.RuntimeName, v.RuntimeVersion)
	case "rm":
		if len(argv) != 4 {
			fail("rm takes one pod id")
		}
		remove(ctx, rt, argv[3])
	case "run":
		run(ctx, rt, argv[3:])
	default:
		fail("unknown command '%s'", argv[2])
	}
}

func remove(ctx context.Context, rt cri.RuntimeServiceClient, pod string) {
	if _, err := rt.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: pod}); err != nil {
		fail("StopPodSandbox: %v", err)
	}
	if _, err := rt.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: pod}); err != nil {
		fail("RemovePodSandbox: %v", err)
	}
}

func run(ctx context.Context, rt cri.RuntimeServiceClient, argv []string) {
	if len(argv) < 4 {
		fail("run NAME IMAGE [KEY=VALUE...] -- CMD...")
	}
	name, image := argv[0], argv[1]
	ann := map[string]string{}
	i := 2
	for ; i < len(argv) && argv[i] != "--"; i++ {
		k, v, ok := strings.Cut(argv[i], "=")
		if !ok {
			fail("'%s' is not KEY=VALUE", argv[i])
		}
		ann[k] = v
	}
	if i+1 >= len(argv) {
		fail("no command after --")
	}
	cmd := argv[i+1:]
	logs := "/tmp/cri-client-logs/" + name
	if err := os.MkdirAll(logs, 0o755); err != nil {
		fail("%v", err)
	}
	ns := os.Getenv("CRI_NAMESPACE") // the pod's namespace, as the kubelet gives it
	if ns == "" {
		ns = "cos-test"
	}
	podCfg := &cri.PodSandboxConfig{
		Metadata:     &cri.PodSandboxMetadata{Name: name, Namespace: ns, Uid: name + "-uid"},
		Annotations:  ann,
		LogDirectory: logs,
		Linux: &cri.LinuxPodSandboxConfig{
			CgroupParent: "/cos-nri-test/" + name,
			SecurityContext: &cri.LinuxSandboxSecurityContext{
				NamespaceOptions: &cri.NamespaceOption{Network: cri.NamespaceMode_NODE},
			},
		},
	}
	pod, err := rt.RunPodSandbox(ctx, &cri.RunPodSandboxRequest{Config: podCfg})
	if err != nil {
		fail("RunPodSandbox: %v", err)
	}
	fmt.Printf("pod %s\n", pod.PodSandboxId)
	ctrCfg := &cri.ContainerConfig{
		Metadata: &cri.ContainerMetadata{Name: name + "-c"},
		Image:    &cri.ImageSpec{Image: image},
		Command:  cmd,
		LogPath:  "container.log",
		Linux:    &cri.LinuxContainerConfig{},
	}
	ctr, err := rt.CreateContainer(ctx, &cri.CreateContainerRequest{PodSandboxId: pod.PodSandboxId,
		Config: ctrCfg, SandboxConfig: podCfg})
	if err == nil {
		fmt.Printf("container %s\n", ctr.ContainerId)
		_, err = rt.StartContainer(ctx, &cri.StartContainerRequest{ContainerId: ctr.ContainerId})
		if err != nil {
			err = fmt.Errorf("StartContainer: %v", err)
		}
	} else {
		err = fmt.Errorf("CreateContainer: %v", err)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cri-client: %v\n", err)
		remove(ctx, rt, pod.PodSandboxId)
		os.Exit(1)
	}
}
