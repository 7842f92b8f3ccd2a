# Sourced by the image scripts: how podman runs on this project's machines.
# The default ulimits of containers.conf cannot be applied here, so a
# CONTAINERS_CONF with none is written (unless one is given); crun and
# --cgroups=disabled fail here, runc works.
image_conf() {
	if [[ -z ${CONTAINERS_CONF:-} ]]; then
		mkdir -p "$1"
		local conf
		conf=$(cd "$1" && pwd)/containers.conf
		printf '[containers]\ndefault_ulimits = []\n' >"$conf"
		export CONTAINERS_CONF=$conf
	fi
}
# The flags every host-backend `podman run` of the artest image takes: the
# ranks share memory through /dev/shm, which is 64 MB in a container unless
# --shm-size says otherwise. (GPU runs take --ipc=host instead, for CUDA IPC;
# podman refuses --shm-size with it, and /dev/shm is then the host's.)
image_run_flags=(--rm --ulimit host --runtime runc --shm-size=1g)
