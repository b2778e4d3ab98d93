package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The test knobs: VolumeSnapshotClass parameters, which the csi-snapshotter passes to CreateSnapshot.
const (
	// KnobFail makes CreateSnapshot fail with the parameter's value as the message: a driver that refuses.
	KnobFail = "stowage.test/fail"
	// KnobReadyAfter (a Go duration, e.g. "90s") keeps the snapshot readyToUse=false that long after it was cut.
	KnobReadyAfter = "stowage.test/ready-after"
	// KnobFailDelete makes DeleteSnapshot of this snapshot fail with the value as the message.
	KnobFailDelete = "stowage.test/fail-delete"
)

// defaultCapacity is a volume's size when the claim asks for none.
const defaultCapacity = 1 << 20

type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
	name, nodeID string
	store        *store
}

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.name, VendorVersion: version}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, c := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// checkCapabilities accepts filesystem volumes only: a volume is a directory, never a block device.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	for _, c := range caps {
		if c.GetBlock() != nil {
			return status.Error(codes.InvalidArgument, "block volumes are not supported: this driver's volumes are directories")
		}
		if c.GetMount() == nil {
			return status.Error(codes.InvalidArgument, "a volume capability must be a mount")
		}
	}
	return nil
}

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	capacity := req.GetCapacityRange().GetRequiredBytes()
	if capacity == 0 {
		capacity = defaultCapacity
	}
	if limit := req.GetCapacityRange().GetLimitBytes(); limit != 0 && limit < capacity {
		return nil, status.Errorf(codes.OutOfRange, "limit %d is below the required %d bytes", limit, capacity)
	}
	var fromSnapshot string
	if src := req.GetVolumeContentSource(); src != nil {
		if src.GetSnapshot() == nil {
			return nil, status.Error(codes.InvalidArgument, "only a snapshot can be a volume's content source (cloning is not supported)")
		}
		fromSnapshot = src.GetSnapshot().GetSnapshotId()
	}
	fsType, err := filesystemOf(req.GetParameters(), capacity)
	if err != nil {
		return nil, err
	}

	s := d.store
	s.mu.Lock()
	defer s.mu.Unlock()
	id := idFor("vol", req.GetName())
	if v, err := s.volume(id); err == nil {
		if v.Capacity < capacity || v.SourceSnapshot != fromSnapshot || v.Filesystem != fsType {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with another capacity or source", req.GetName())
		}
		return &csi.CreateVolumeResponse{Volume: d.volumeOf(v, req.GetVolumeContentSource())}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}

	if fsType != "" {
		return d.createFilesystemVolume(id, req, capacity, fromSnapshot, fsType)
	}

	tmp := s.volumeDir(id) + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Mkdir(tmp, 0o777); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	// World-writable as a fresh disk's root would be made by mkfs for root: pods of any user may write.
	if err := os.Chmod(tmp, 0o777); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if fromSnapshot != "" {
		if err := d.fillFromSnapshot(tmp, fromSnapshot, capacity); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
	}
	if err := os.Rename(tmp, s.volumeDir(id)); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	v := &volumeMeta{ID: id, Name: req.GetName(), Capacity: capacity, SourceSnapshot: fromSnapshot}
	if err := writeJSON(s.volumeMetaPath(id), v); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.CreateVolumeResponse{Volume: d.volumeOf(v, req.GetVolumeContentSource())}, nil
}

func (d *driver) fillFromSnapshot(dir, snapID string, capacity int64) error {
	if !validID(snapID, "snap") {
		return status.Errorf(codes.NotFound, "snapshot %q was not made by this driver", snapID)
	}
	snap, err := d.store.snapshot(snapID)
	if errors.Is(err, os.ErrNotExist) {
		return status.Errorf(codes.NotFound, "snapshot %s does not exist", snapID)
	} else if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if time.Now().Before(snap.ReadyAt) {
		return status.Errorf(codes.Unavailable, "snapshot %s is not ready until %s", snapID, snap.ReadyAt.Format(time.RFC3339))
	}
	if capacity < snap.SizeBytes {
		return status.Errorf(codes.OutOfRange, "the volume (%d bytes) is smaller than snapshot %s (%d bytes)", capacity, snapID, snap.SizeBytes)
	}
	if err := untar(d.store.snapshotTar(snapID), dir); err != nil {
		return status.Errorf(codes.Internal, "restoring snapshot %s: %v", snapID, err)
	}
	return nil
}

func (d *driver) volumeOf(v *volumeMeta, src *csi.VolumeContentSource) *csi.Volume {
	return &csi.Volume{VolumeId: v.ID, CapacityBytes: v.Capacity, ContentSource: src}
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	if !validID(id, "vol") {
		return &csi.DeleteVolumeResponse{}, nil // never ours, so already gone
	}
	s := d.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := releaseFilesystem(s.volumeDir(id), s.volumeImage(id)); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.RemoveAll(s.volumeDir(id)); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Remove(s.volumeMetaPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if !validID(req.GetVolumeId(), "vol") {
		return nil, status.Errorf(codes.NotFound, "volume %q does not exist", req.GetVolumeId())
	}
	if _, err := d.store.volume(req.GetVolumeId()); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %q does not exist", req.GetVolumeId())
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters(),
	}}, nil
}

func (d *driver) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" || req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "name and source_volume_id are required")
	}
	params := req.GetParameters()
	if msg, ok := params[KnobFail]; ok {
		return nil, status.Error(codes.FailedPrecondition, msg)
	}
	readyAfter := time.Duration(0)
	if v, ok := params[KnobReadyAfter]; ok {
		var err error
		if readyAfter, err = time.ParseDuration(v); err != nil || readyAfter < 0 {
			return nil, status.Errorf(codes.InvalidArgument, "parameter %s: %q is not a duration such as 90s", KnobReadyAfter, v)
		}
	}
	for k := range params {
		if k != KnobFail && k != KnobReadyAfter && k != KnobFailDelete {
			return nil, status.Errorf(codes.InvalidArgument, "unknown snapshot class parameter %q (this driver knows %s, %s, %s)", k, KnobFail, KnobReadyAfter, KnobFailDelete)
		}
	}

	s := d.store
	s.mu.Lock()
	defer s.mu.Unlock()
	id := idFor("snap", req.GetName())
	if snap, err := s.snapshot(id); err == nil {
		// The csi-snapshotter repeats CreateSnapshot until the snapshot is ready.
		if snap.SourceVolume != req.GetSourceVolumeId() {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %s exists for another volume", req.GetName())
		}
		return &csi.CreateSnapshotResponse{Snapshot: snapshotOf(snap)}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	vol, err := s.volume(req.GetSourceVolumeId())
	if !validID(req.GetSourceVolumeId(), "vol") || errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist", req.GetSourceVolumeId())
	} else if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := tarDir(s.volumeDir(vol.ID), s.snapshotTar(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "copying volume %s: %v", vol.ID, err)
	}
	now := time.Now().UTC()
	// SizeBytes is the restore size, as CSI means it: the source volume's capacity.
	snap := &snapshotMeta{ID: id, Name: req.GetName(), SourceVolume: vol.ID, SizeBytes: vol.Capacity, CreatedAt: now, ReadyAt: now.Add(readyAfter), FailDelete: params[KnobFailDelete]}
	if err := writeJSON(s.snapshotMetaPath(id), snap); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.CreateSnapshotResponse{Snapshot: snapshotOf(snap)}, nil
}

func snapshotOf(m *snapshotMeta) *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId: m.ID, SourceVolumeId: m.SourceVolume, SizeBytes: m.SizeBytes,
		CreationTime: timestamppb.New(m.CreatedAt), ReadyToUse: !time.Now().Before(m.ReadyAt),
	}
}

func (d *driver) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	if !validID(id, "snap") {
		return &csi.DeleteSnapshotResponse{}, nil
	}
	s := d.store
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.snapshot(id)
	if errors.Is(err, os.ErrNotExist) {
		return &csi.DeleteSnapshotResponse{}, nil
	} else if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if marker, err := os.ReadFile(s.failDeleteMarker(id)); err == nil {
		return nil, status.Error(codes.FailedPrecondition, string(marker))
	}
	if snap.FailDelete != "" {
		return nil, status.Error(codes.FailedPrecondition, snap.FailDelete)
	}
	for _, p := range []string{s.snapshotTar(id), s.snapshotMetaPath(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

func (d *driver) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	all, err := d.store.snapshots()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	var matched []*snapshotMeta
	for _, m := range all {
		if (req.GetSnapshotId() == "" || m.ID == req.GetSnapshotId()) && (req.GetSourceVolumeId() == "" || m.SourceVolume == req.GetSourceVolumeId()) {
			matched = append(matched, m)
		}
	}
	start := 0
	if t := req.GetStartingToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > len(matched) {
			return nil, status.Errorf(codes.Aborted, "starting_token %q is not one this driver gave", t)
		}
		start = n
	}
	end := len(matched)
	if m := int(req.GetMaxEntries()); m > 0 && start+m < end {
		end = start + m
	}
	resp := &csi.ListSnapshotsResponse{}
	for _, m := range matched[start:end] {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: snapshotOf(m)})
	}
	if end < len(matched) {
		resp.NextToken = fmt.Sprint(end)
	}
	return resp, nil
}
