/* The default seccomp profile, linked into the nsbox binary so that it is
 * never read from a path someone else could replace. */
    .section .rodata
    .global nsbox_default_profile
    .global nsbox_default_profile_end
nsbox_default_profile:
    .incbin "seccomp-profiles/default.json"
nsbox_default_profile_end:
    .byte 0
/* Nested mode's (seccomp-profiles/nested.json, generated from default.json
 * and nested-additions.json; docs/nested.md). */
    .global nsbox_nested_profile
    .global nsbox_nested_profile_end
nsbox_nested_profile:
    .incbin "seccomp-profiles/nested.json"
nsbox_nested_profile_end:
    .byte 0
    .section .note.GNU-stack,"",@progbits
