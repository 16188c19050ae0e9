"""The system a check judges: this machine, or one it is not running on (an unpacked container image, a
mounted or copied Windows drive), read through one file-system and environment interface
(:class:`gpudoctor.sysroot.view.SystemView`) so that the same logic runs on both, and Windows logic runs in
tests on Linux exactly as it would on Windows (issue 25)."""
