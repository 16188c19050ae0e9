"""Windows facts about the CUDA stack, read from a Windows system's files through
:class:`gpudoctor.sysroot.view.SystemView` (a live Windows machine, or a copied or mounted ``C:\\`` judged from
Linux): which DLL Windows and Python would load (:mod:`.dll_search`), the CUDA toolkits, ``CUDA_PATH``, the
driver's DLLs, cuDNN and TensorRT copies and Python installs (:mod:`.install`), Visual Studio's MSVC toolsets
and the ``_MSC_VER`` bounds of a toolkit's ``host_config.h`` (:mod:`.msvc`). Facts only: nothing here judges;
the rules do (issue 25, item 4). Nothing in the judged system is executed.
"""
