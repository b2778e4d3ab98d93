// stowage-csi: a small CSI driver for Stowage's real-node tests. TEST INFRASTRUCTURE ONLY; the
// product is TypeScript and never runs this. The Kubernetes CSI project's host-path driver and
// node-driver-registrar are not served by the Go module proxy this project builds from, so this one
// stands in for both: volumes are directories under --root, a snapshot is a tar of a volume's
// directory, and it answers the kubelet's plugin-registration API itself. Test knobs (snapshot
// class parameters and marker files) are described in ../README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// version is set with -ldflags by scripts/node/csi.ts (the source's hash).
var version = "dev"

func main() {
	name := flag.String("driver-name", "csi.stowage.test", "the CSI driver name")
	endpoint := flag.String("endpoint", "", "unix socket path to serve CSI on (the kubelet and the sidecars dial it)")
	regSocket := flag.String("registration-socket", "", "unix socket path in the kubelet's plugins_registry dir (empty: do not register with a kubelet)")
	root := flag.String("root", "", "directory holding the volumes and snapshots")
	nodeID := flag.String("node-id", "", "the Node's name, returned by NodeGetInfo")
	flag.Parse()
	if *endpoint == "" || *root == "" || *nodeID == "" {
		log.Fatal("--endpoint, --root and --node-id are required")
	}
	st, err := openStore(*root)
	if err != nil {
		log.Fatal(err)
	}
	d := &driver{name: *name, nodeID: *nodeID, store: st}

	srv := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	csi.RegisterNodeServer(srv, d)
	csiLis := listen(*endpoint)
	go serve(srv, csiLis, "CSI")

	var regSrv *grpc.Server
	if *regSocket != "" {
		// Registered last: the kubelet dials the CSI endpoint as soon as it sees this socket.
		regSrv = grpc.NewServer()
		registration.RegisterRegistrationServer(regSrv, &registrar{name: *name, endpoint: *endpoint})
		go serve(regSrv, listen(*regSocket), "registration")
	}
	log.Printf("stowage-csi %s: driver %s serving %s (root %s, node %s)", version, *name, *endpoint, *root, *nodeID)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		log.Printf("%s: stopping", s)
	case code := <-exitCode:
		cleanup(regSrv, *regSocket, srv, *endpoint)
		os.Exit(code)
	}
	cleanup(regSrv, *regSocket, srv, *endpoint)
}

// exitCode ends the process from a handler (a failed registration) after the sockets are removed.
var exitCode = make(chan int, 1)

func cleanup(regSrv *grpc.Server, regSocket string, srv *grpc.Server, endpoint string) {
	// The registration socket first: its removal is what makes the kubelet deregister the driver.
	if regSrv != nil {
		regSrv.Stop()
		_ = os.Remove(regSocket)
	}
	srv.Stop()
	_ = os.Remove(endpoint)
}

func listen(sock string) net.Listener {
	if err := os.MkdirAll(filepath.Dir(sock), 0o750); err != nil {
		log.Fatal(err)
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Fatalf("removing the stale socket %s: %v", sock, err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatal(err)
	}
	return l
}

func serve(s *grpc.Server, l net.Listener, what string) {
	if err := s.Serve(l); err != nil {
		log.Printf("%s server: %v", what, err)
	}
}

// logCalls logs every CSI call that is not a poll, and every error: the test log is the only place
// a failing provision or snapshot can be read afterwards.
func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		log.Printf("%s: %s", info.FullMethod, status.Convert(err).Message())
	} else if !quiet[info.FullMethod] {
		log.Printf("%s: ok", info.FullMethod)
	}
	return resp, err
}

var quiet = map[string]bool{
	"/csi.v1.Identity/Probe":                       true,
	"/csi.v1.Identity/GetPluginInfo":               true,
	"/csi.v1.Identity/GetPluginCapabilities":       true,
	"/csi.v1.Controller/ControllerGetCapabilities": true,
	"/csi.v1.Node/NodeGetCapabilities":             true,
}

// registrar answers the kubelet's plugin watcher, as node-driver-registrar would.
type registrar struct {
	registration.UnimplementedRegistrationServer
	name, endpoint string
}

func (r *registrar) GetInfo(context.Context, *registration.InfoRequest) (*registration.PluginInfo, error) {
	return &registration.PluginInfo{Type: registration.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registration.RegistrationStatus) (*registration.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		// The kubelet does not retry: exit, so whoever started the driver sees why.
		log.Printf("the kubelet refused the registration: %s", s.Error)
		exitCode <- 1
	} else {
		log.Printf("registered with the kubelet")
	}
	return &registration.RegistrationStatusResponse{}, nil
}

func init() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	log.SetPrefix(fmt.Sprintf("stowage-csi[%d] ", os.Getpid()))
}
