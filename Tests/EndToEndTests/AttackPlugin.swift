/// A plug-in that does what a hostile or careless one would, one route per
/// attack (README, "Security model"). Built by the sandbox tests with `cc`,
/// never installed as a sample. Every route answers with what happened, so
/// a test can tell "denied with an errno" from "done".
enum AttackPlugin {
    static let name = "attacker"

    static let source = #"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include <sys/un.h>
#include <termios.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xcallback.h"

XCALLBACK_PLUGIN("attacker", "1.0.0", "Tries what a hostile plug-in would")

extern char **environ;
static const xcallback_host_api *host;

static const char *parameter(const xcallback_request *request, const char *name) {
    size_t length = 0;
    return host->request_parameter(request, name, &length);
}

/* The host: the `host` parameter the test passes (a worker's parent is the
 * zygote it was forked from), or the parent. */
static pid_t host_of(const xcallback_request *request) {
    const char *host = parameter(request, "host");
    return host != NULL ? (pid_t)atoi(host) : getppid();
}

static void done(xcallback_reply reply, const char *result) {
    const xcallback_param output[] = { { "result", result } };
    host->reply_success(reply, output, 1);
}

static void failed(xcallback_reply reply, const char *what) {
    char message[256];
    snprintf(message, sizeof message, "%s: %s", what, strerror(errno));
    host->reply_error(reply, "Denied", message, NULL);
}

/* read?path=P: the file's first bytes. */
static void read_file(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *path = parameter(request, "path");
    int fd = open(path ? path : "/etc/shadow", O_RDONLY | O_CLOEXEC);
    if (fd < 0) { failed(reply, "open"); return; }
    char text[65] = {0};
    ssize_t count = read(fd, text, 64);
    close(fd);
    if (count < 0) { failed(reply, "read"); return; }
    done(reply, text);
}

/* write?path=P: creates P. */
static void write_file(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *path = parameter(request, "path");
    int fd = open(path ? path : "planted", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) { failed(reply, "open"); return; }
    ssize_t written = write(fd, "planted\n", 8);
    close(fd);
    if (written != 8) { failed(reply, "write"); return; }
    done(reply, "written");
}

/* connect?port=N: a TCP connection to 127.0.0.1:N. */
static void connect_port(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *port = parameter(request, "port");
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) { failed(reply, "socket"); return; }
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port ? port : "1")),
                                   .sin_addr = { htonl(INADDR_LOOPBACK) } };
    int result = connect(fd, (struct sockaddr *)&address, sizeof address);
    close(fd);
    if (result != 0) { failed(reply, "connect"); return; }
    done(reply, "connected");
}

/* exec: /bin/sh -c 'exit 7', and its exit status. */
static void exec_shell(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    char *arguments[] = { "/bin/sh", "-c", "exit 7", NULL };
    pid_t child;
    int error = posix_spawn(&child, "/bin/sh", NULL, NULL, arguments, environ);
    if (error != 0) { errno = error; failed(reply, "posix_spawn /bin/sh"); return; }
    int status = 0;
    waitpid(child, &status, 0);
    char text[32];
    snprintf(text, sizeof text, "status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    done(reply, text);
}

/* system: system("id"). */
static void run_system(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    int status = system("id >&2");
    if (status == -1) { failed(reply, "system"); return; }
    char text[32];
    snprintf(text, sizeof text, "status %d", status);
    done(reply, text);
}

/* forkbomb: forks until it cannot (children exit at once); how many. */
static void fork_bomb(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    int forked = 0;
    for (; forked < 100000; forked++) {
        pid_t child = fork();
        if (child == 0) { pause(); _exit(0); }
        if (child < 0) break;
    }
    if (forked == 0) { failed(reply, "fork"); return; }
    char text[32];
    snprintf(text, sizeof text, "forked %d", forked);
    done(reply, text);
}

/* linger?count=N: N children that try to leave the worker's process group
 * and then wait a minute, holding whatever they inherited. Their pids and
 * what setsid said. */
static void linger(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *count_text = parameter(request, "count");
    int count = count_text ? atoi(count_text) : 5;
    char text[512] = "";
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) { failed(reply, "pipe"); return; }
    for (int i = 0; i < count; i++) {
        pid_t child = fork();
        if (child < 0) { failed(reply, "fork"); return; }
        if (child == 0) {
            int left = setsid() >= 0;
            char verdict = left ? 'y' : 'n';
            (void)write(pipe_ends[1], &verdict, 1);
            sleep(60);
            _exit(0);
        }
        char verdict = '?';
        (void)read(pipe_ends[0], &verdict, 1);
        size_t used = strlen(text);
        snprintf(text + used, sizeof text - used, "%s%d:%c", i ? "," : "", (int)child, verdict);
    }
    done(reply, text);
}

/* fds: opens /dev/null until it cannot; how many. */
static void open_many(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    int opened = 0;
    int first = -1, last = -1;
    for (; opened < 100000; opened++) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) break;
        if (first < 0) first = fd;
        last = fd;
    }
    for (int fd = first; first >= 0 && fd <= last; fd++) close(fd);
    char text[32];
    snprintf(text, sizeof text, "%d", opened);
    done(reply, text);
}

/* alloc?mib=N: allocates and touches N MiB a MiB at a time; a careless
 * plug-in, it aborts when malloc fails. */
static void allocate(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *mib_text = parameter(request, "mib");
    int mib = mib_text ? atoi(mib_text) : 1024;
    char **blocks = calloc((size_t)mib, sizeof *blocks);
    for (int i = 0; i < mib; i++) {
        blocks[i] = malloc(1 << 20);
        if (blocks[i] == NULL) abort();
        memset(blocks[i], 1, 1 << 20);
    }
    for (int i = 0; i < mib; i++) free(blocks[i]);
    free(blocks);
    done(reply, "allocated");
}

/* sharedalloc?mib=N: N MiB of shared anonymous memory, touched: not data,
 * so RLIMIT_DATA alone would not see it. */
static void allocate_shared(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *mib_text = parameter(request, "mib");
    size_t size = (size_t)(mib_text ? atoi(mib_text) : 1024) << 20;
    char *memory = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) { failed(reply, "mmap"); return; }
    munmap(memory, size);
    done(reply, "mapped");
}

/* killhost: SIGKILL to the host. */
static void kill_host(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    if (kill(host, SIGKILL) != 0) { failed(reply, "kill"); return; }
    done(reply, "killed the host");
}

/* killsiblings: SIGKILL to every pid near its own (the other workers). */
static void kill_siblings(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    int killed = 0;
    for (pid_t pid = getpid() - 64; pid < getpid() + 64; pid++) {
        if (pid > 1 && pid != getpid() && pid != host && kill(pid, SIGKILL) == 0) killed++;
    }
    char text[32];
    snprintf(text, sizeof text, "killed %d", killed);
    done(reply, text);
}

/* forge: writes a record into the host's stdout and a request into its
 * stdin through /proc/HOST/fd. */
static void forge(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/1", (int)host);
    int out = open(path, O_WRONLY | O_CLOEXEC);
    if (out < 0) { failed(reply, "open the host's stdout"); return; }
    (void)write(out, "success?forged=record\n", 22);
    close(out);
    done(reply, "forged");
}

/* sigio: asks for SIGIO on a pipe on the host's behalf (F_SETOWN), then
 * makes the pipe readable: SIGIO's default action ends a process. */
static void send_sigio(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    int ends[2];
    if (pipe(ends) != 0) { failed(reply, "pipe"); return; }
    if (fcntl(ends[0], F_SETOWN, host) != 0) { failed(reply, "F_SETOWN"); return; }
    if (fcntl(ends[0], F_SETFL, O_ASYNC | O_NONBLOCK) != 0) { failed(reply, "O_ASYNC"); return; }
    (void)write(ends[1], "x", 1);
    close(ends[0]);
    close(ends[1]);
    done(reply, "sent");
}

/* prlimit: shrinks the host's file-size limit, so its next record write
 * would die of SIGXFSZ. */
static void limit_host(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    struct rlimit tiny = { 1, 1 };
    if (prlimit(host, RLIMIT_FSIZE, &tiny, NULL) != 0) { failed(reply, "prlimit"); return; }
    done(reply, "limited");
}

/* env?name=N: the variable's value, if the worker has it. */
static void read_environment(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *name = parameter(request, "name");
    const char *value = getenv(name ? name : "HOME");
    if (value == NULL) { host->reply_error(reply, "Unset", "no such variable", NULL); return; }
    done(reply, value);
}

/* memory?reversed=S: whether the reverse of S is anywhere in this
   process's readable memory: its environment block, its stack, its heap,
   what it was forked from. Neither the request nor this code holds the text
   itself (it is kept XORed), so only a real copy is found. */
static int matches_masked(const unsigned char *bytes, const unsigned char *masked, size_t length) {
    for (size_t i = 0; i < length; i++) {
        if ((unsigned char)(bytes[i] ^ 0x5A) != masked[i]) return 0;
    }
    return 1;
}

static void search_memory(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *reversed = parameter(request, "reversed");
    if (reversed == NULL) { host->reply_error(reply, "Usage", "reversed is required", NULL); return; }
    size_t length = strlen(reversed);
    unsigned char masked[256];
    if (length == 0 || length >= sizeof masked) { host->reply_error(reply, "Usage", "bad needle", NULL); return; }
    for (size_t i = 0; i < length; i++) masked[i] = (unsigned char)reversed[length - 1 - i] ^ 0x5A;
    /* Read in place: a worker of a root host runs as another user once
     * its sandbox is up, and /proc/self/mem of a non-dumpable process is
     * root's. */
    FILE *maps = fopen("/proc/self/maps", "re");
    if (maps == NULL) { failed(reply, "open /proc/self/maps"); return; }
    char line[512];
    const char *found = "absent";
    while (fgets(line, sizeof line, maps) != NULL && strcmp(found, "absent") == 0) {
        unsigned long start, end;
        char permissions[5];
        if (sscanf(line, "%lx-%lx %4s", &start, &end, permissions) != 3 || permissions[0] != 'r') continue;
        if (strstr(line, "[vvar") || strstr(line, "[vsyscall]") || strchr(line, '/') != NULL) continue;
        const unsigned char *memory = (const unsigned char *)start;
        for (size_t i = 0; i + length <= end - start; i++) {
            if (matches_masked(memory + i, masked, length)) { found = "found"; break; }
        }
    }
    fclose(maps);
    done(reply, found);
}

/* idle-host: the host, by its pid, set to SCHED_IDLE. */
static void idle_host(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    struct sched_param none = { 0 };
    if (sched_setscheduler(host, SCHED_IDLE, &none) != 0) { failed(reply, "sched_setscheduler"); return; }
    done(reply, "idled");
}

/* idle-threads: every thread id between the host's pid and this worker's
   (the host's threads, and workers started before this one) set to
   SCHED_IDLE (the parent aside); answers how many it changed. */
static void idle_threads(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    struct sched_param none = { 0 };
    int changed = 0;
    for (pid_t tid = host + 1; tid < getpid(); tid++) {
        if (tid == getppid()) continue; /* the zygote: idle-host?host=PID */
        if (sched_setscheduler(tid, SCHED_IDLE, &none) == 0) changed++;
    }
    char text[32];
    snprintf(text, sizeof text, "%d", changed);
    done(reply, text);
}

/* killgroup: SIGKILL to the process group the host (or zygote) leads. */
static void kill_group(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    if (kill(-host, SIGKILL) != 0) { failed(reply, "kill"); return; }
    done(reply, "killed the group");
}

/* ioprio-user: every process of this user (0: root) to the idle I/O class. */
static void idle_user_io(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    if (syscall(SYS_ioprio_set, 3 /* IOPRIO_WHO_USER */, 0, 3 << 13 /* IOPRIO_CLASS_IDLE */) != 0) {
        failed(reply, "ioprio_set");
        return;
    }
    done(reply, "idled");
}

static void trace_host(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    if (ptrace(PTRACE_ATTACH, host, NULL, NULL) != 0) { failed(reply, "ptrace"); return; }
    done(reply, "attached");
}

static void write_host_memory(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    char byte = 0;
    struct iovec local = { &byte, 1 }, remote = { (void *)0x400000, 1 };
    if (process_vm_writev(host, &local, 1, &remote, 1, 0) < 0) { failed(reply, "process_vm_writev"); return; }
    done(reply, "written");
}

static void mount_tmpfs(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    if (mount("none", "/mnt", "tmpfs", 0, NULL) != 0) { failed(reply, "mount"); return; }
    done(reply, "mounted");
}

static void load_bpf(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    if (syscall(SYS_bpf, 0, NULL, 0) < 0) { failed(reply, "bpf"); return; }
    done(reply, "bpf");
}

/* --- Where Landlock does not reach (issue 27): System V IPC, Unix
 * datagrams to a path, tkill, the host's terminal, namespaces. --- */

/* shm?marker=M: every shared-memory segment it can find (SHM_STAT over all
 * indexes) attached and read; the text of the first that starts with M. */
static void read_shared_memory(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *marker = parameter(request, "marker");
    struct shm_info info;
    int highest = shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)&info);
    if (highest < 0) { failed(reply, "shmctl"); return; }
    int error = ENOENT;
    for (int index = 0; index <= highest; index++) {
        struct shmid_ds state;
        int id = shmctl(index, SHM_STAT, &state);
        if (id < 0) { error = errno; continue; }
        char *memory = shmat(id, NULL, SHM_RDONLY);
        if (memory == (void *)-1) { error = errno; continue; }
        char text[129] = {0};
        memcpy(text, memory, 128);
        shmdt(memory);
        if (marker && strncmp(text, marker, strlen(marker)) == 0) { done(reply, text); return; }
    }
    errno = error;
    failed(reply, "shmat");
}

/* msg?marker=M: every message queue it can find (MSG_STAT), each one's first
 * message taken; the text of the first that starts with M. */
static void take_message(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *marker = parameter(request, "marker");
    struct msginfo info;
    int highest = msgctl(0, MSG_INFO, (struct msqid_ds *)(void *)&info);
    if (highest < 0) { failed(reply, "msgctl"); return; }
    int error = ENOENT;
    for (int index = 0; index <= highest; index++) {
        struct msqid_ds state;
        int id = msgctl(index, MSG_STAT, &state);
        if (id < 0) { error = errno; continue; }
        struct { long type; char text[129]; } message;
        memset(&message, 0, sizeof message);
        if (msgrcv(id, &message, sizeof message.text - 1, 0, IPC_NOWAIT | MSG_NOERROR) < 0) { error = errno; continue; }
        if (marker && strncmp(message.text, marker, strlen(marker)) == 0) { done(reply, message.text); return; }
    }
    errno = error;
    failed(reply, "msgrcv");
}

/* mq?marker=M: the POSIX message queue named /M, its first message taken. */
static void take_posix_message(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *marker = parameter(request, "marker");
    char name[160];
    snprintf(name, sizeof name, "/%s", marker ? marker : "x");
    mqd_t queue = mq_open(name, O_RDWR | O_NONBLOCK);
    if (queue == (mqd_t)-1) { failed(reply, "mq_open"); return; }
    char text[8193] = {0};
    ssize_t got = mq_receive(queue, text, sizeof text - 1, NULL);
    mq_close(queue);
    if (got < 0) { failed(reply, "mq_receive"); return; }
    done(reply, text);
}

static struct sockaddr_un unix_address(const xcallback_request *request) {
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    const char *path = parameter(request, "path");
    strncpy(address.sun_path, path ? path : "/dev/log", sizeof address.sun_path - 1);
    return address;
}

/* unixdgram?path=P[&type=raw]: a datagram socketpair (no socket() needed),
 * then a forged syslog line to P by sendto, and another after connect. */
static void unix_datagrams(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *type = parameter(request, "type");
    int pair[2];
    if (socketpair(AF_UNIX, (type && strcmp(type, "raw") == 0 ? SOCK_RAW : SOCK_DGRAM) | SOCK_CLOEXEC, 0, pair) != 0) {
        failed(reply, "socketpair");
        return;
    }
    struct sockaddr_un address = unix_address(request);
    const char *line = "<13>attacker: forged syslog line";
    int sent = 0;
    if (sendto(pair[0], line, strlen(line), 0, (struct sockaddr *)&address, sizeof address) >= 0) sent++;
    if (connect(pair[1], (struct sockaddr *)&address, sizeof address) == 0 && send(pair[1], line, strlen(line), 0) >= 0) sent++;
    close(pair[0]);
    close(pair[1]);
    char text[32];
    snprintf(text, sizeof text, "sent %d", sent);
    done(reply, text);
}

/* unixsendto?path=P: sendto P on a seqpacket pair (which ignores the address). */
static void unix_sendto(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) { failed(reply, "socketpair"); return; }
    struct sockaddr_un address = unix_address(request);
    ssize_t sent = sendto(pair[0], "x", 1, 0, (struct sockaddr *)&address, sizeof address);
    close(pair[0]);
    close(pair[1]);
    if (sent < 0) { failed(reply, "sendto"); return; }
    done(reply, "sent");
}

/* unixconnect?path=P: connect to P from a stream pair's socket. */
static void unix_connect(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) { failed(reply, "socketpair"); return; }
    struct sockaddr_un address = unix_address(request);
    int result = connect(pair[0], (struct sockaddr *)&address, sizeof address);
    close(pair[0]);
    close(pair[1]);
    if (result != 0) { failed(reply, "connect"); return; }
    done(reply, "connected");
}

/* tkill: SIGKILL to the host by thread id. */
static void tkill_host(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    if (syscall(SYS_tkill, host, SIGKILL) != 0) { failed(reply, "tkill"); return; }
    done(reply, "killed the host");
}

/* tgkill: SIGKILL to the host's main thread by thread group and id. */
static void tgkill_host(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    pid_t host = host_of(request);
    if (syscall(SYS_tgkill, host, host, SIGKILL) != 0) { failed(reply, "tgkill"); return; }
    done(reply, "killed the host");
}

/* childraise: a child that raises SIGUSR1 on itself; how it ended. */
static void child_raise(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    pid_t child = fork();
    if (child < 0) { failed(reply, "fork"); return; }
    if (child == 0) { raise(SIGUSR1); _exit(0); }
    int status = 0;
    waitpid(child, &status, 0);
    char text[32];
    snprintf(text, sizeof text, WIFSIGNALED(status) ? "signal %d" : "exit %d",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    done(reply, text);
}

/* tty?fd=N: the terminal requests that take a terminal from its owner, on
 * descriptor N (2: the host's stderr), each with its errno (0: done), and
 * what opening /dev/tty gave. Output stopped by TCXONC is started again. */
static int terminal_request(int fd, unsigned long request, long argument) {
    return ioctl(fd, request, argument) == 0 ? 0 : errno;
}

static void take_terminal(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *fd_text = parameter(request, "fd");
    int fd = fd_text ? atoi(fd_text) : 2;
    pid_t group = getpgrp();
    int pgrp = terminal_request(fd, TIOCSPGRP, (long)&group);
    int xonc = terminal_request(fd, TCXONC, TCOOFF);
    if (xonc == 0) (void)ioctl(fd, TCXONC, TCOON);
    int flush = terminal_request(fd, TCFLSH, TCIOFLUSH);
    int ctty = terminal_request(fd, TIOCSCTTY, 0);
    int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    int opened = tty >= 0 ? 0 : errno;
    if (tty >= 0) close(tty);
    char text[96];
    snprintf(text, sizeof text, "pgrp:%d xonc:%d flush:%d ctty:%d tty:%d", pgrp, xonc, flush, ctty, opened);
    done(reply, text);
}

/* ns?kind=K: the worker's namespace of kind K (/proc/self/ns/K). */
static void namespace_of(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *kind = parameter(request, "kind");
    char path[64], target[128] = {0};
    snprintf(path, sizeof path, "/proc/self/ns/%s", kind ? kind : "ipc");
    if (readlink(path, target, sizeof target - 1) < 0) { failed(reply, "readlink"); return; }
    done(reply, target);
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
    host = api;
    struct { const char *action; xcallback_handler handler; } routes[] = {
        {"read", read_file}, {"write", write_file}, {"connect", connect_port}, {"exec", exec_shell},
        {"system", run_system}, {"forkbomb", fork_bomb}, {"linger", linger}, {"fds", open_many},
        {"alloc", allocate}, {"sharedalloc", allocate_shared}, {"killhost", kill_host}, {"killgroup", kill_group}, {"ioprio-user", idle_user_io}, {"killsiblings", kill_siblings}, {"forge", forge},
        {"env", read_environment}, {"memory", search_memory}, {"idle-host", idle_host}, {"idle-threads", idle_threads}, {"sigio", send_sigio}, {"prlimit", limit_host}, {"ptrace", trace_host}, {"vmwrite", write_host_memory}, {"mount", mount_tmpfs}, {"bpf", load_bpf},
        {"shm", read_shared_memory}, {"msg", take_message}, {"unixdgram", unix_datagrams}, {"unixsendto", unix_sendto},
        {"unixconnect", unix_connect}, {"tkill", tkill_host}, {"tgkill", tgkill_host}, {"childraise", child_raise},
        {"tty", take_terminal}, {"ns", namespace_of}, {"mq", take_posix_message},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        int rc = api->register_action(plugin, "attack", routes[i].action, routes[i].handler, NULL);
        if (rc != XCALLBACK_OK) return rc;
    }
    return XCALLBACK_OK;
}
"""#
}
