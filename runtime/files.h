#ifndef NSBOX_RUNTIME_FILES_H
#define NSBOX_RUNTIME_FILES_H

/* argv[0] of an exec that is a file operation run by init's child itself
 * (no program is executed).  Contains a byte no real path has. */
#define NSBOX_FILE_OP_MARKER "\x01nsbox-file"

/* In the command's child: when argv is a file operation, performs it and
 * exits with 0 or the errno (never returns); otherwise returns -1.
 * Operations: write PATH [append] (data on stdin; a write that fails
 * leaves PATH as it was: an overwrite goes to a new file that replaces PATH
 * when complete), read PATH [OFFSET
 * [LENGTH]] (data on stdout, file size on stderr), list PATH [DEPTH]
 * (JSON on stdout), mkdir PATH, delete PATH [recursive]. */
int nsbox_files_builtin(char **argv);

#endif
