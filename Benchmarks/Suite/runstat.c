/*
 * runstat.c — runs a command and reports its wall time and resource usage.
 *
 *   runstat OUTFILE COMMAND [ARG...]
 *
 * stdin, stdout and stderr are the command's. When it ends, OUTFILE gets one
 * line: "<wall ns> <user us> <system us> <max RSS KiB> <exit status>".
 *
 * Why not measure from Python: ru_maxrss survives exec, so a child forked
 * from a 100 MiB Python process reports at least 100 MiB whatever it does;
 * forked from this small program it reports its own peak (and, as wait4(2)
 * does, that of the children it reaped: the workers in process isolation).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: runstat OUTFILE COMMAND [ARG...]\n");
        return 2;
    }
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t child = fork();
    if (child < 0) { perror("runstat: fork"); return 2; }
    if (child == 0) {
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int status = 0;
    struct rusage usage;
    while (wait4(child, &status, 0, &usage) < 0) {}
    clock_gettime(CLOCK_MONOTONIC, &end);
    FILE *out = fopen(argv[1], "w");
    if (out == NULL) { perror(argv[1]); return 2; }
    long long wall = (long long)(end.tv_sec - start.tv_sec) * 1000000000LL + (end.tv_nsec - start.tv_nsec);
    fprintf(out, "%lld %lld %lld %ld %d\n", wall,
            (long long)usage.ru_utime.tv_sec * 1000000 + usage.ru_utime.tv_usec,
            (long long)usage.ru_stime.tv_sec * 1000000 + usage.ru_stime.tv_usec,
            usage.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    fclose(out);
    return 0;
}
