/*
 * hog: small helpers for tests/vm/selftest.sh, run inside the VM.
 * Built statically on the host (cc -static -O2) so the guest needs no libs.
 *
 *   hog mem MB             malloc MB megabytes and touch every page; exit 0
 *                          if that worked (in a tight cgroup it is killed)
 *   hog fork N             fork up to N children that wait; report how many
 *                          succeeded and the errno that stopped it; exit 0
 *                          if fork failed with EAGAIN before N, 1 otherwise
 *   hog spin SEC           burn CPU for SEC seconds of wall time
 *   hog userns-overlay DIR as an ordinary user: unshare(CLONE_NEWUSER |
 *                          CLONE_NEWNS), map the user to root, mount an
 *                          overlay of DIR/{lower,upper,work} on DIR/merged
 *                          and write through it; exit 0 when the written
 *                          file shows up in DIR/upper
 *   hog pivot DIR          in a new mount namespace, mount a tmpfs on DIR
 *                          and pivot_root into it; exit 0 if that worked
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int saved = errno;
	close(fd);
	errno = saved;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int cmd_mem(long mb)
{
	size_t size = (size_t)mb << 20;
	char *p = malloc(size);
	if (!p) {
		fprintf(stderr, "hog: malloc(%ld MB) failed\n", mb);
		return 2;
	}
	long page = sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < size; i += (size_t)page) {
		p[i] = (char)i;
		if (i % (16UL << 20) == 0) {
			printf("hog: touched %zu MB\n", i >> 20);
			fflush(stdout);
		}
	}
	printf("hog: touched all %ld MB\n", mb);
	return 0;
}

static int cmd_fork(long n)
{
	pid_t *kids = calloc((size_t)n, sizeof *kids);
	long made = 0;
	int err = 0;
	if (!kids)
		return 2;
	for (; made < n; made++) {
		pid_t pid = fork();
		if (pid < 0) {
			err = errno;
			break;
		}
		if (pid == 0) {
			pause();
			_exit(0);
		}
		kids[made] = pid;
	}
	printf("hog: forked %ld of %ld; stopped by %s\n", made, n, err ? strerror(err) : "nothing");
	for (long i = 0; i < made; i++)
		kill(kids[i], SIGKILL);
	for (long i = 0; i < made; i++)
		waitpid(kids[i], NULL, 0);
	return (made < n && err == EAGAIN) ? 0 : 1;
}

static int cmd_spin(long sec)
{
	struct timespec start, now;
	volatile unsigned long x = 0;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < sec);
	return 0;
}

static int cmd_userns_overlay(const char *dir)
{
	char buf[4096], lower[1024], upper[1024], work[1024], merged[1024];
	uid_t uid = getuid();
	gid_t gid = getgid();

	snprintf(lower, sizeof lower, "%s/lower", dir);
	snprintf(upper, sizeof upper, "%s/upper", dir);
	snprintf(work, sizeof work, "%s/work", dir);
	snprintf(merged, sizeof merged, "%s/merged", dir);

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		perror("hog: unshare(CLONE_NEWUSER|CLONE_NEWNS)");
		return 1;
	}
	if (write_file("/proc/self/setgroups", "deny") < 0) {
		perror("hog: setgroups deny");
		return 1;
	}
	snprintf(buf, sizeof buf, "0 %u 1", (unsigned)uid);
	if (write_file("/proc/self/uid_map", buf) < 0) {
		perror("hog: uid_map");
		return 1;
	}
	snprintf(buf, sizeof buf, "0 %u 1", (unsigned)gid);
	if (write_file("/proc/self/gid_map", buf) < 0) {
		perror("hog: gid_map");
		return 1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		perror("hog: make / private");
		return 1;
	}
	snprintf(buf, sizeof buf, "lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work);
	if (mount("overlay", merged, "overlay", 0, buf) < 0) {
		perror("hog: mount overlay in a user namespace");
		return 1;
	}
	char path[1100];
	snprintf(path, sizeof path, "%s/written", merged);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "x\n", 2) != 2 || close(fd) < 0) {
		perror("hog: write through the overlay");
		return 1;
	}
	snprintf(path, sizeof path, "%s/written", upper);
	struct stat st;
	if (stat(path, &st) < 0) {
		perror("hog: the written file is not in upperdir");
		return 1;
	}
	printf("hog: overlay mounted in a user namespace as uid %u (root inside)\n", (unsigned)uid);
	return 0;
}

static int cmd_pivot(const char *dir)
{
	char old[1100];
	if (unshare(CLONE_NEWNS) < 0) {
		perror("hog: unshare(CLONE_NEWNS)");
		return 1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		perror("hog: make / private");
		return 1;
	}
	if (mount("tmpfs", dir, "tmpfs", 0, NULL) < 0) {
		perror("hog: mount tmpfs");
		return 1;
	}
	snprintf(old, sizeof old, "%s/old", dir);
	if (mkdir(old, 0755) < 0) {
		perror("hog: mkdir old");
		return 1;
	}
	if (syscall(SYS_pivot_root, dir, old) < 0) {
		perror("hog: pivot_root");
		return 1;
	}
	if (chdir("/") < 0 || umount2("/old", MNT_DETACH) < 0) {
		perror("hog: detach the old root");
		return 1;
	}
	printf("hog: pivot_root worked\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "mem") == 0)
		return cmd_mem(atol(argv[2]));
	if (argc == 3 && strcmp(argv[1], "fork") == 0)
		return cmd_fork(atol(argv[2]));
	if (argc == 3 && strcmp(argv[1], "spin") == 0)
		return cmd_spin(atol(argv[2]));
	if (argc == 3 && strcmp(argv[1], "userns-overlay") == 0)
		return cmd_userns_overlay(argv[2]);
	if (argc == 3 && strcmp(argv[1], "pivot") == 0)
		return cmd_pivot(argv[2]);
	fprintf(stderr, "usage: hog mem MB | fork N | spin SEC | userns-overlay DIR | pivot DIR\n");
	return 2;
}
