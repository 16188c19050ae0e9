"""WSL and container pitfalls."""
from __future__ import annotations

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.rules._util import driver_cuda, v

WSL_DOC = "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"
CTK_DOC = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"


def wsl_driver(facts, ctx):
    """Under WSL 2, libcuda must come from /usr/lib/wsl/lib (the Windows driver), never a Linux driver package."""
    p = facts["platform"]
    if not (p.get("wsl") or {}).get("is_wsl"):
        return []
    d = facts["driver"]
    out = []
    linux_libcuda = [c["realpath"] for c in d.get("libcuda") or [] if not c["realpath"].startswith("/usr/lib/wsl/")]
    if linux_libcuda:
        out.append(Finding(
            "wsl.linux_driver", Severity.FAIL, "platform",
            "A Linux NVIDIA driver's libcuda is installed inside WSL; WSL must use the Windows driver's",
            evidence={"linux_libcuda": linux_libcuda, "wsl_libcuda": (p.get("wsl") or {}).get("libcuda_dir"),
                      "loaded": d.get("libcuda_loaded")},
            fixes=(Fix("Remove the Linux driver packages inside WSL and let /usr/lib/wsl/lib be found.",
                       ("sudo apt-get remove --purge -y '^nvidia-driver-.*' '^libnvidia-compute-.*'",
                        "sudo ldconfig", "ldconfig -p | grep libcuda   # should list /usr/lib/wsl/lib only")),),
            doc=WSL_DOC))
    if not (p.get("wsl") or {}).get("libcuda_dir"):
        out.append(Finding("wsl.no_gpu_driver", Severity.FAIL, "platform",
                           "WSL 2 without /usr/lib/wsl/lib/libcuda.so: the Windows NVIDIA driver is missing or too old",
                           evidence={"kernel": p.get("kernel")},
                           fixes=(Fix("Install a current NVIDIA Windows driver on the host, then `wsl --shutdown`.",
                                      ("wsl --update", "wsl --shutdown"), shell="powershell"),), doc=WSL_DOC))
    return out


def container(facts, ctx):
    p = facts["platform"]
    c = p.get("container") or {}
    if not c.get("is_container"):
        return []
    out = []
    # /dev/nvidiaN are the GPUs; /dev/nvidiactl alone does not give access to any.
    nodes = [n for n in p.get("dev_nodes") or [] if n[len("/dev/nvidia"):].isdigit()]
    nvd = c.get("nvidia_visible_devices")
    if not nodes:
        why = "NVIDIA_VISIBLE_DEVICES is unset" if nvd is None else f"NVIDIA_VISIBLE_DEVICES={nvd}" if nvd in ("void", "none", "") else "no /dev/nvidia* device nodes"
        out.append(Finding("container.no_gpu", Severity.FAIL, "platform",
                           f"Running in a container with no GPU passed in ({why})",
                           evidence={"markers": c.get("markers"), "NVIDIA_VISIBLE_DEVICES": nvd, "dev_nodes": p.get("dev_nodes")},
                           fixes=(Fix("Start the container with GPUs (NVIDIA Container Toolkit on the host).",
                                      ("docker run --gpus all ...", "# Kubernetes: resources.limits: nvidia.com/gpu: 1")),),
                           doc=CTK_DOC))
    req = (c.get("nvidia_require_cuda") or {}).get("cuda")
    dcuda, _ = driver_cuda(facts)
    if req and dcuda and req.startswith(">="):
        need = v(req[2:])
        if need and v(dcuda) and v(dcuda) < need:
            out.append(Finding("container.require_cuda", Severity.FAIL, "platform",
                               f"The image requires CUDA {req}, the host driver supports CUDA {dcuda}",
                               evidence={"NVIDIA_REQUIRE_CUDA": req, "driver_cuda": dcuda},
                               fixes=(Fix("Upgrade the host driver, or use an image built for an older CUDA "
                                          "(NVIDIA_DISABLE_REQUIRE=1 only skips the check).", ()),),
                               detail="nvidia-container-cli refuses to start it: 'requirement error: unsatisfied condition: cuda>=…'."))
    return out
