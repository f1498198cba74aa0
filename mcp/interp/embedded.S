/* nsbox's interpreter drivers, linked into the binary so that what runs in
 * a sandbox is never read from a path someone else could replace; written
 * once per version to STORE/cache/drivers/ (drivers.c). */
    .section .rodata
    .global mcp_driver_python
    .global mcp_driver_python_end
    .global mcp_driver_python_rich
    .global mcp_driver_python_rich_end
    .global mcp_driver_python_charts
    .global mcp_driver_python_charts_end
    .global mcp_driver_python_magics
    .global mcp_driver_python_magics_end
    .global mcp_driver_python_ipython
    .global mcp_driver_python_ipython_end
    .global mcp_driver_python_fork
    .global mcp_driver_python_fork_end
    .global mcp_driver_node
    .global mcp_driver_node_end
    .global mcp_driver_node_imports
    .global mcp_driver_node_imports_end
    .global mcp_driver_r
    .global mcp_driver_r_end
    .global mcp_driver_java
    .global mcp_driver_java_end
    .global mcp_driver_zygote_py
    .global mcp_driver_zygote_js
mcp_driver_python:
    .incbin "mcp/interp/drivers/python.py"
mcp_driver_python_end:
    .byte 0
mcp_driver_python_rich:
    .incbin "mcp/interp/drivers/python_rich.py"
mcp_driver_python_rich_end:
    .byte 0
mcp_driver_python_charts:
    .incbin "mcp/interp/drivers/python_charts.py"
mcp_driver_python_charts_end:
    .byte 0
mcp_driver_python_magics:
    .incbin "mcp/interp/drivers/python_magics.py"
mcp_driver_python_magics_end:
    .byte 0
mcp_driver_python_ipython:
    .incbin "mcp/interp/drivers/python_ipython.py"
mcp_driver_python_ipython_end:
    .byte 0
mcp_driver_python_fork:
    .incbin "mcp/interp/drivers/python_fork.py"
mcp_driver_python_fork_end:
    .byte 0
mcp_driver_node:
    .incbin "mcp/interp/drivers/node.js"
mcp_driver_node_end:
    .byte 0
mcp_driver_node_imports:
    .incbin "mcp/interp/drivers/node_imports.js"
mcp_driver_node_imports_end:
    .byte 0
mcp_driver_r:
    .incbin "mcp/interp/drivers/r_driver.R"
mcp_driver_r_end:
    .byte 0
mcp_driver_java:
    .incbin "mcp/interp/drivers/JavaDriver.java"
mcp_driver_java_end:
    .byte 0
mcp_driver_zygote_py:
    .incbin "mcp/interp/drivers/zygote.py"
    .byte 0
mcp_driver_zygote_js:
    .incbin "mcp/interp/drivers/zygote.js"
    .byte 0
    .section .note.GNU-stack,"",@progbits
