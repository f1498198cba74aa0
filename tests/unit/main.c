/* Runs every C unit-test suite; see check.h for the output protocol. */
#include "check.h"
#include "suites.h"

#include "../../runtime/egress/egress.h"

const char *check_suite = "";
const char *check_current = "";
int check_failed_now, check_skipped_now;
char check_skip_reason[256];
int check_pass, check_fail, check_skip;

int main(int argc, char **argv)
{
    /* First: sandboxes the tests make start their egress broker as
     * /proc/self/exe (egress.h). */
    nsbox_egress_main_hook(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
#define SUITE(name)                                                                                \
    check_suite = "unit/" #name;                                                                   \
    suite_##name();
#include "suites.def"
#undef SUITE
    if (check_skip)
        printf("# unit: %d skipped (SKIP lines above)\n", check_skip);
    printf("unit: %d passed, %d failed\n", check_pass, check_fail);
    /* The completion marker tests/run.sh wants as the last line. */
    printf("# done unit\n");
    return check_fail == 0 ? 0 : 1;
}
