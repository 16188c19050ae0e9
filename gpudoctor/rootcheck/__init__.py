"""`gpudoctor check --root DIR` / `--image FILE`: a system judged from its files (issue 25). The root is read
through :mod:`gpudoctor.sysroot` by the probes of :mod:`gpudoctor.probes.root` (Linux) and
:mod:`gpudoctor.probes.windows_root`, and judged by the live check's rules where their facts can feed them."""
