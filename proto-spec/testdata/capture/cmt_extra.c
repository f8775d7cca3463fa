/* Small driver for the ZooKeeper 3.8.0 C client (libzookeeper_mt) covering what
 * cli_mt cannot do: multi (success and failure), getACL/setACL, create2 with
 * TTL, checkWatches (zoo_remove_watches with a watcher => opcode 17) and
 * removeWatches (zoo_remove_all_watches => opcode 18).
 * Build: gcc -o cmt_extra cmt_extra.c -lzookeeper_mt   (Debian libzookeeper-mt-dev)
 * Usage: cmt_extra HOST:PORT
 */
#define THREADED 1
#include <zookeeper/zookeeper.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void global_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
    fprintf(stderr, "global watcher: type=%d state=%d path=%s\n", type, state, path ? path : "(null)");
}
static void my_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
    fprintf(stderr, "object watcher: type=%d state=%d path=%s\n", type, state, path ? path : "(null)");
}

int main(int argc, char **argv) {
    zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
    zhandle_t *zh = zookeeper_init(argc > 1 ? argv[1] : "127.0.0.1:22191", global_watcher, 10000, 0, 0, 0);
    if (!zh) return 1;
    for (int i = 0; i < 100 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++) usleep(50000);
    char buf[256];
    struct Stat st;
    int rc;

    rc = zoo_create(zh, "/cm", "root", 4, &ZOO_OPEN_ACL_UNSAFE, 0, buf, sizeof buf);
    printf("create /cm: %d\n", rc);

    /* multi that succeeds: create, setData, check, delete */
    zoo_op_t ops[4];
    zoo_op_result_t res[4];
    char b0[64];
    zoo_create_op_init(&ops[0], "/cm/a", "A", 1, &ZOO_OPEN_ACL_UNSAFE, 0, b0, sizeof b0);
    zoo_set_op_init(&ops[1], "/cm/a", "A2", 2, 0, &st);
    zoo_check_op_init(&ops[2], "/cm/a", 1);
    zoo_create_op_init(&ops[3], "/cm/s-", "S", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_SEQUENCE, buf, sizeof buf);
    rc = zoo_multi(zh, 4, ops, res);
    printf("multi ok: %d [%d %d %d %d]\n", rc, res[0].err, res[1].err, res[2].err, res[3].err);

    /* multi whose middle op fails (delete with wrong version) */
    zoo_op_t f[3];
    zoo_op_result_t fr[3];
    zoo_create_op_init(&f[0], "/cm/b", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, b0, sizeof b0);
    zoo_delete_op_init(&f[1], "/cm/a", 5);
    zoo_set_op_init(&f[2], "/cm/a", "x", 1, -1, &st);
    rc = zoo_multi(zh, 3, f, fr);
    printf("multi fail: %d [%d %d %d]\n", rc, fr[0].err, fr[1].err, fr[2].err);

    /* ACLs */
    struct ACL_vector acl;
    rc = zoo_get_acl(zh, "/cm", &acl, &st);
    printf("get_acl: %d count=%d\n", rc, acl.count);
    rc = zoo_set_acl(zh, "/cm", 0, &ZOO_OPEN_ACL_UNSAFE);
    printf("set_acl: %d\n", rc);
    rc = zoo_set_acl(zh, "/cm", 9, &ZOO_OPEN_ACL_UNSAFE);
    printf("set_acl bad version: %d\n", rc);

    /* create2 with TTL (opcode 21 with PERSISTENT_WITH_TTL mode), create2 plain (15) */
    rc = zoo_create2_ttl(zh, "/cm/ttl", "t", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_WITH_TTL, 60000, buf, sizeof buf, &st);
    printf("create2_ttl: %d\n", rc);
    rc = zoo_create2(zh, "/cm/c2", "c", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, buf, sizeof buf, &st);
    printf("create2 container: %d\n", rc);

    /* watches: wget with a watcher object, then checkWatches (17) / removeWatches (18) */
    int len = sizeof buf;
    rc = zoo_wget(zh, "/cm", my_watcher, NULL, buf, &len, &st);
    printf("wget: %d\n", rc);
    rc = zoo_remove_watches(zh, "/cm", ZWATCHTYPE_DATA, my_watcher, NULL, 0);
    printf("remove_watches (check_watches op): %d\n", rc);
    rc = zoo_remove_watches(zh, "/cm", ZWATCHTYPE_DATA, my_watcher, NULL, 0);
    printf("remove_watches again (expect ZNOWATCHER -121): %d\n", rc);
    struct String_vector sv;
    rc = zoo_get_children(zh, "/cm", 1, &sv);
    printf("get_children watch: %d\n", rc);
    rc = zoo_remove_all_watches(zh, "/cm", ZWATCHTYPE_CHILD, 0);
    printf("remove_all_watches: %d\n", rc);

    /* clean up: multi of deletes */
    rc = zoo_get_children(zh, "/cm", 0, &sv);
    for (int i = 0; i < sv.count; i++) {
        snprintf(buf, sizeof buf, "/cm/%s", sv.data[i]);
        zoo_delete(zh, buf, -1);
    }
    rc = zoo_delete(zh, "/cm", -1);
    printf("delete /cm: %d\n", rc);
    zookeeper_close(zh);
    return 0;
}
