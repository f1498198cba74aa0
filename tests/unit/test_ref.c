/* Unit tests for images/ref.c: Docker normalization and skopeo transports. */
#include "check.h"
#include "suites.h"

#include "../../common/cleanup.h"
#include "../../images/ref.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define DIGEST "sha256:" HEX64

/* Parses a Docker reference and checks every field; NULL means "must be
 * NULL". */
static void expect_docker(const char *input, const char *name, const char *domain, const char *path,
                          const char *tag, const char *digest)
{
    struct image_ref ref;
    struct nsbox_err err = {0};
    char source[512];
    int rc = image_ref_parse(input, NULL, &ref, &err);

    CHECK(rc == 0);
    if (rc != 0) {
        printf("# unexpected error: %s\n", err.msg);
        return;
    }
    CHECK(ref.transport == IMAGE_TRANSPORT_DOCKER);
    CHECK_STR(ref.name, name);
    CHECK_STR(ref.domain, domain);
    CHECK_STR(ref.path, path);
    CHECK(tag ? ref.tag && strcmp(ref.tag, tag) == 0 : ref.tag == NULL);
    CHECK(digest ? ref.digest && strcmp(ref.digest, digest) == 0 : ref.digest == NULL);
    CHECK(ref.file == NULL && ref.file_ref == NULL);
    snprintf(source, sizeof(source), "docker://%s", name);
    if (!(tag && digest))
        CHECK_STR(ref.source, source);
    image_ref_free(&ref);
    CHECK(ref.name == NULL && ref.source == NULL && ref.domain == NULL);
}

static void expect_file(const char *input, const char *cwd, enum image_transport transport,
                        const char *name, const char *file, const char *file_ref)
{
    struct image_ref ref;
    struct nsbox_err err = {0};
    int rc = image_ref_parse(input, cwd, &ref, &err);

    CHECK(rc == 0);
    if (rc != 0) {
        printf("# unexpected error: %s\n", err.msg);
        return;
    }
    CHECK(ref.transport == transport);
    CHECK_STR(ref.name, name);
    CHECK_STR(ref.source, name);
    CHECK_STR(ref.file, file);
    CHECK(file_ref ? ref.file_ref && strcmp(ref.file_ref, file_ref) == 0 : ref.file_ref == NULL);
    CHECK(ref.domain == NULL && ref.path == NULL && ref.tag == NULL && ref.digest == NULL);
    image_ref_free(&ref);
}

/* Expects a failure whose message contains want, with out left zeroed even
 * though it held garbage before the call. */
static void expect_error(const char *input, const char *want)
{
    struct image_ref ref;
    struct nsbox_err err = {0};

    memset(&ref, 0xa5, sizeof(ref));
    CHECK(image_ref_parse(input, "/cwd", &ref, &err) == -1);
    CHECK(ref.name == NULL && ref.source == NULL && ref.domain == NULL && ref.path == NULL &&
          ref.tag == NULL && ref.digest == NULL && ref.file == NULL && ref.file_ref == NULL &&
          ref.transport == 0);
    CHECK(err.msg[0] != '\0');
    if (strstr(err.msg, want) == NULL)
        printf("# message was: %s\n", err.msg);
    CHECK(strstr(err.msg, want) != NULL);
}

/* ---- Docker Hub normalization ---- */

static void test_bare_name(void)
{
    expect_docker("python", "docker.io/library/python:latest", "docker.io", "library/python",
                  "latest", NULL);
}

static void test_name_with_tag(void)
{
    expect_docker("python:3.12-slim", "docker.io/library/python:3.12-slim", "docker.io",
                  "library/python", "3.12-slim", NULL);
}

static void test_library_prefix_explicit(void)
{
    expect_docker("library/python", "docker.io/library/python:latest", "docker.io",
                  "library/python", "latest", NULL);
}

static void test_docker_io_single_component(void)
{
    expect_docker("docker.io/python", "docker.io/library/python:latest", "docker.io",
                  "library/python", "latest", NULL);
}

static void test_legacy_index_domain(void)
{
    expect_docker("index.docker.io/library/python:3", "docker.io/library/python:3", "docker.io",
                  "library/python", "3", NULL);
}

static void test_hub_user_repo(void)
{
    expect_docker("user/app:v1", "docker.io/user/app:v1", "docker.io", "user/app", "v1", NULL);
}

/* "docker:" without "//" is the Docker Hub image named docker. */
static void test_docker_image_not_transport(void)
{
    expect_docker("docker:24-dind", "docker.io/library/docker:24-dind", "docker.io",
                  "library/docker", "24-dind", NULL);
}

static void test_path_separators(void)
{
    expect_docker("a__b/c--d.e_f:T_1.x-y", "docker.io/a__b/c--d.e_f:T_1.x-y", "docker.io",
                  "a__b/c--d.e_f", "T_1.x-y", NULL);
}

/* ---- Other registries ---- */

static void test_ghcr(void)
{
    expect_docker("ghcr.io/org/img:tag", "ghcr.io/org/img:tag", "ghcr.io", "org/img", "tag", NULL);
}

static void test_ghcr_nested(void)
{
    expect_docker("ghcr.io/org/sub/img", "ghcr.io/org/sub/img:latest", "ghcr.io", "org/sub/img",
                  "latest", NULL);
}

static void test_single_component_on_other_registry(void)
{
    /* library/ is a Docker Hub convention only. */
    expect_docker("quay.io/img", "quay.io/img:latest", "quay.io", "img", "latest", NULL);
}

static void test_localhost(void)
{
    expect_docker("localhost/img", "localhost/img:latest", "localhost", "img", "latest", NULL);
}

static void test_localhost_port(void)
{
    expect_docker("localhost:5000/img:1", "localhost:5000/img:1", "localhost:5000", "img", "1",
                  NULL);
}

static void test_ipv4_port(void)
{
    expect_docker("127.0.0.1:5000/busybox", "127.0.0.1:5000/busybox:latest", "127.0.0.1:5000",
                  "busybox", "latest", NULL);
}

static void test_ipv6_port(void)
{
    expect_docker("[::1]:5000/busybox:1", "[::1]:5000/busybox:1", "[::1]:5000", "busybox", "1",
                  NULL);
}

/* distribution: an uppercase first component can only be a domain. */
static void test_uppercase_first_component_is_domain(void)
{
    expect_docker("Registry/img", "Registry/img:latest", "Registry", "img", "latest", NULL);
}

/* Without a '/', "localhost:5000" is image localhost with tag 5000. */
static void test_host_port_without_path(void)
{
    expect_docker("localhost:5000", "docker.io/library/localhost:5000", "docker.io",
                  "library/localhost", "5000", NULL);
}

/* A registry host named like a transport ("oci:5000", "dir:1",
 * "tarball:1") keeps "docker://" in the name, so that the name parses back
 * to the same registry image (fuzz-ref's round-trip check found
 * "docker://oci-archive:1/..." turning into an OCI archive path). */
static void test_registry_named_like_a_transport(void)
{
    static const char *const in[] = {"docker://oci:5000/img", "docker://oci-archive:1/a/b",
                                     "docker://dir:80/x:2", "docker://tarball:1/y"};
    static const char *const name[] = {"docker://oci:5000/img:latest",
                                       "docker://oci-archive:1/a/b:latest", "docker://dir:80/x:2",
                                       "docker://tarball:1/y:latest"};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        struct image_ref ref, again;
        struct nsbox_err err = {0};
        CHECK(image_ref_parse(in[i], "/cwd", &ref, &err) == 0);
        CHECK(ref.transport == IMAGE_TRANSPORT_DOCKER);
        CHECK_STR(ref.name, name[i]);
        CHECK_STR(ref.source, name[i]);
        CHECK(image_ref_parse(ref.name, "/elsewhere", &again, &err) == 0);
        CHECK(again.transport == IMAGE_TRANSPORT_DOCKER);
        CHECK_STR(again.name, ref.name);
        image_ref_free(&again);
        image_ref_free(&ref);
    }
}

/* ---- Digests ---- */

static void test_digest_only(void)
{
    expect_docker("img@" DIGEST, "docker.io/library/img@" DIGEST, "docker.io", "library/img", NULL,
                  DIGEST);
}

static void test_tag_and_digest(void)
{
    struct image_ref ref;
    struct nsbox_err err = {0};

    expect_docker("img:tag@" DIGEST, "docker.io/library/img:tag@" DIGEST, "docker.io",
                  "library/img", "tag", DIGEST);
    CHECK(image_ref_parse("img:tag@" DIGEST, NULL, &ref, &err) == 0);
    CHECK_STR(ref.source, "docker://docker.io/library/img@" DIGEST);
    image_ref_free(&ref);
}

/* ---- docker:// transport ---- */

static void test_docker_transport(void)
{
    expect_docker("docker://busybox", "docker.io/library/busybox:latest", "docker.io",
                  "library/busybox", "latest", NULL);
}

static void test_docker_transport_registry(void)
{
    expect_docker("docker://127.0.0.1:5000/x:y", "127.0.0.1:5000/x:y", "127.0.0.1:5000", "x", "y",
                  NULL);
}

/* ---- File transports ---- */

static void test_oci_with_ref(void)
{
    expect_file("oci:/tmp/layout:latest", NULL, IMAGE_TRANSPORT_OCI, "oci:/tmp/layout:latest",
                "/tmp/layout", "latest");
}

static void test_oci_without_ref(void)
{
    expect_file("oci:/tmp/layout", NULL, IMAGE_TRANSPORT_OCI, "oci:/tmp/layout", "/tmp/layout",
                NULL);
}

static void test_oci_relative(void)
{
    expect_file("oci:rel/dir:tag", "/home/u", IMAGE_TRANSPORT_OCI, "oci:/home/u/rel/dir:tag",
                "/home/u/rel/dir", "tag");
}

static void test_oci_dotdot(void)
{
    expect_file("oci:../x", "/a/b", IMAGE_TRANSPORT_OCI, "oci:/a/x", "/a/x", NULL);
}

static void test_oci_path_cleaned(void)
{
    expect_file("oci:.//d/./e/../../../..//f/", "/a", IMAGE_TRANSPORT_OCI, "oci:/f", "/f", NULL);
}

static void test_oci_ref_with_colon_and_slash(void)
{
    /* Split at the FIRST ':'; the OCI ref name itself may hold ':'. */
    expect_file("oci:/l:example.com/app:v1", NULL, IMAGE_TRANSPORT_OCI, "oci:/l:example.com/app:v1",
                "/l", "example.com/app:v1");
}

static void test_oci_archive(void)
{
    expect_file("oci-archive:/tmp/a.tar:tag", NULL, IMAGE_TRANSPORT_OCI_ARCHIVE,
                "oci-archive:/tmp/a.tar:tag", "/tmp/a.tar", "tag");
}

static void test_docker_archive_ref(void)
{
    expect_file("docker-archive:/tmp/d.tar:busybox:latest", NULL, IMAGE_TRANSPORT_DOCKER_ARCHIVE,
                "docker-archive:/tmp/d.tar:busybox:latest", "/tmp/d.tar", "busybox:latest");
}

static void test_docker_archive_relative(void)
{
    expect_file("docker-archive:d.tar", "/srv", IMAGE_TRANSPORT_DOCKER_ARCHIVE,
                "docker-archive:/srv/d.tar", "/srv/d.tar", NULL);
}

static void test_dir(void)
{
    expect_file("dir:/tmp/d", NULL, IMAGE_TRANSPORT_DIR, "dir:/tmp/d", "/tmp/d", NULL);
}

/* dir: has no REF, so a ':' belongs to the path. */
static void test_dir_path_with_colon(void)
{
    expect_file("dir:/tmp/a:b", NULL, IMAGE_TRANSPORT_DIR, "dir:/tmp/a:b", "/tmp/a:b", NULL);
}

static void test_dir_spaces_allowed(void)
{
    expect_file("dir:my dir", "/home/u", IMAGE_TRANSPORT_DIR, "dir:/home/u/my dir",
                "/home/u/my dir", NULL);
}

static void test_relative_uses_getcwd(void)
{
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    char want_file[4096], want_name[4200];

    CHECK(cwd != NULL);
    if (cwd == NULL)
        return;
    snprintf(want_file, sizeof(want_file), "%s/x", strcmp(cwd, "/") == 0 ? "" : cwd);
    snprintf(want_name, sizeof(want_name), "dir:%s", want_file);
    expect_file("dir:x", NULL, IMAGE_TRANSPORT_DIR, want_name, want_file, NULL);
}

/* ---- Errors ---- */

static void test_err_empty(void)
{
    expect_error("", "empty");
}

static void test_err_null_input(void)
{
    expect_error(NULL, "empty");
}

static void test_err_dir_without_path(void)
{
    expect_error("dir:", "needs a path");
}

static void test_err_oci_without_path(void)
{
    expect_error("oci::tag", "needs a path");
}

static void test_err_oci_trailing_colon(void)
{
    expect_error("oci:/tmp/l:", "empty reference");
}

static void test_err_oci_bad_ref(void)
{
    expect_error("oci:/tmp/l:bad ref", "invalid OCI image name");
}

static void test_err_cwd_with_colon(void)
{
    struct image_ref ref;
    struct nsbox_err err = {0};

    CHECK(image_ref_parse("oci:rel:tag", "/a:b", &ref, &err) == -1);
    CHECK(strstr(err.msg, "contains ':'") != NULL);
    CHECK(ref.name == NULL && ref.file == NULL && ref.file_ref == NULL);
}

static void test_err_relative_cwd(void)
{
    struct image_ref ref;
    struct nsbox_err err = {0};

    CHECK(image_ref_parse("oci:rel", "not/abs", &ref, &err) == -1);
    CHECK(strstr(err.msg, "not absolute") != NULL);
}

static void test_err_uppercase_name(void)
{
    expect_error("Python", "repository name must be lowercase");
}

static void test_err_uppercase_path(void)
{
    expect_error("ghcr.io/Org/img", "repository name must be lowercase");
}

static void test_err_trailing_colon(void)
{
    expect_error("img:", "tag is empty");
}

static void test_err_empty_tag_before_digest(void)
{
    expect_error("img:@" DIGEST, "tag is empty");
}

static void test_err_trailing_at(void)
{
    expect_error("img@", "digest is empty");
}

static void test_err_short_digest(void)
{
    expect_error("img@sha256:abc", "64 hex");
}

static void test_err_uppercase_digest(void)
{
    expect_error("img@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef"
                 "0123456789abcdef",
                 "lowercase hex");
}

static void test_err_md5_digest(void)
{
    expect_error("img@md5:0123456789abcdef0123456789abcdef",
                 "unsupported digest algorithm \"md5\"");
}

static void test_err_digest_without_algorithm(void)
{
    expect_error("img@" HEX64, "invalid digest");
}

static void test_err_double_slash(void)
{
    expect_error("a//b", "empty component");
}

static void test_err_trailing_slash(void)
{
    expect_error("a/b/", "empty component");
}

static void test_err_leading_dash(void)
{
    expect_error("-x", "invalid repository name component \"-x\"");
}

static void test_err_bad_separator(void)
{
    expect_error("a___b", "invalid repository name component");
}

static void test_err_long_tag(void)
{
    char input[200] = "img:";

    memset(input + 4, 't', 129);
    input[4 + 129] = '\0';
    expect_error(input, "longer than 128");
}

static void test_max_tag_ok(void)
{
    char input[200] = "img:", name[300];

    memset(input + 4, 't', 128);
    input[4 + 128] = '\0';
    snprintf(name, sizeof(name), "docker.io/library/%s", input);
    expect_docker(input, name, "docker.io", "library/img", input + 4, NULL);
}

static void test_err_bad_tag_start(void)
{
    expect_error("img:.x", "must start with");
}

static void test_err_unsupported_transport(void)
{
    expect_error("docker-daemon:busybox", "transport docker-daemon is not supported by nsbox; "
                                          "supported: docker://, oci:");
}

static void test_err_containers_storage(void)
{
    expect_error("containers-storage:img", "not supported by nsbox");
}

static void test_err_name_too_long(void)
{
    /* docker.io/ + library/ + 238 = 256 characters. */
    char input[300];

    memset(input, 'a', 238);
    input[238] = '\0';
    expect_error(input, "must not be more than 255");
}

static void test_name_at_limit(void)
{
    char input[300], path[320], name[400];

    memset(input, 'a', 237);
    input[237] = '\0';
    snprintf(path, sizeof(path), "library/%s", input);
    snprintf(name, sizeof(name), "docker.io/%s:latest", path);
    expect_docker(input, name, "docker.io", path, "latest", NULL);
}

static void test_err_leading_space(void)
{
    expect_error(" python", "whitespace");
}

static void test_err_inner_space(void)
{
    expect_error("python :3", "whitespace");
}

static void test_err_control_char(void)
{
    expect_error("dir:/tmp/a\nb", "control characters");
}

static void test_err_bad_domain(void)
{
    expect_error("-bad.example/img", "invalid domain");
}

static void test_err_bad_port(void)
{
    expect_error("example.com:abc/img", "invalid port");
}

static void test_err_bad_ipv6(void)
{
    expect_error("[::g]:5000/img", "invalid IPv6");
}

static void test_err_image_id(void)
{
    expect_error(HEX64, "image ID");
}

static void test_err_docker_transport_empty(void)
{
    expect_error("docker://", "repository name is empty");
}

static void test_err_digest_without_name(void)
{
    expect_error("@" DIGEST, "repository name is empty");
}

static void test_err_names_input(void)
{
    expect_error("img:", "invalid image reference \"img:\"");
}

static void test_free_zeroed_is_safe(void)
{
    struct image_ref ref = {0};

    image_ref_free(&ref);
    image_ref_free(&ref);
    image_ref_free(NULL);
    CHECK(ref.name == NULL);
}

void suite_ref(void)
{
    RUN_TEST(test_bare_name);
    RUN_TEST(test_name_with_tag);
    RUN_TEST(test_library_prefix_explicit);
    RUN_TEST(test_docker_io_single_component);
    RUN_TEST(test_legacy_index_domain);
    RUN_TEST(test_hub_user_repo);
    RUN_TEST(test_docker_image_not_transport);
    RUN_TEST(test_path_separators);
    RUN_TEST(test_ghcr);
    RUN_TEST(test_ghcr_nested);
    RUN_TEST(test_single_component_on_other_registry);
    RUN_TEST(test_localhost);
    RUN_TEST(test_localhost_port);
    RUN_TEST(test_ipv4_port);
    RUN_TEST(test_ipv6_port);
    RUN_TEST(test_uppercase_first_component_is_domain);
    RUN_TEST(test_host_port_without_path);
    RUN_TEST(test_registry_named_like_a_transport);
    RUN_TEST(test_digest_only);
    RUN_TEST(test_tag_and_digest);
    RUN_TEST(test_docker_transport);
    RUN_TEST(test_docker_transport_registry);
    RUN_TEST(test_oci_with_ref);
    RUN_TEST(test_oci_without_ref);
    RUN_TEST(test_oci_relative);
    RUN_TEST(test_oci_dotdot);
    RUN_TEST(test_oci_path_cleaned);
    RUN_TEST(test_oci_ref_with_colon_and_slash);
    RUN_TEST(test_oci_archive);
    RUN_TEST(test_docker_archive_ref);
    RUN_TEST(test_docker_archive_relative);
    RUN_TEST(test_dir);
    RUN_TEST(test_dir_path_with_colon);
    RUN_TEST(test_dir_spaces_allowed);
    RUN_TEST(test_relative_uses_getcwd);
    RUN_TEST(test_err_empty);
    RUN_TEST(test_err_null_input);
    RUN_TEST(test_err_dir_without_path);
    RUN_TEST(test_err_oci_without_path);
    RUN_TEST(test_err_oci_trailing_colon);
    RUN_TEST(test_err_oci_bad_ref);
    RUN_TEST(test_err_cwd_with_colon);
    RUN_TEST(test_err_relative_cwd);
    RUN_TEST(test_err_uppercase_name);
    RUN_TEST(test_err_uppercase_path);
    RUN_TEST(test_err_trailing_colon);
    RUN_TEST(test_err_empty_tag_before_digest);
    RUN_TEST(test_err_trailing_at);
    RUN_TEST(test_err_short_digest);
    RUN_TEST(test_err_uppercase_digest);
    RUN_TEST(test_err_md5_digest);
    RUN_TEST(test_err_digest_without_algorithm);
    RUN_TEST(test_err_double_slash);
    RUN_TEST(test_err_trailing_slash);
    RUN_TEST(test_err_leading_dash);
    RUN_TEST(test_err_bad_separator);
    RUN_TEST(test_err_long_tag);
    RUN_TEST(test_max_tag_ok);
    RUN_TEST(test_err_bad_tag_start);
    RUN_TEST(test_err_unsupported_transport);
    RUN_TEST(test_err_containers_storage);
    RUN_TEST(test_err_name_too_long);
    RUN_TEST(test_name_at_limit);
    RUN_TEST(test_err_leading_space);
    RUN_TEST(test_err_inner_space);
    RUN_TEST(test_err_control_char);
    RUN_TEST(test_err_bad_domain);
    RUN_TEST(test_err_bad_port);
    RUN_TEST(test_err_bad_ipv6);
    RUN_TEST(test_err_image_id);
    RUN_TEST(test_err_docker_transport_empty);
    RUN_TEST(test_err_digest_without_name);
    RUN_TEST(test_err_names_input);
    RUN_TEST(test_free_zeroed_is_safe);
}
