/* dag_cmd.h - `acc plan --graph FILE.json`: planning a published graph. */
#ifndef ACC_DAG_CMD_H
#define ACC_DAG_CMD_H

/* argv: the arguments after "plan". Returns the exit status. */
int acc_plan_main(int argc, char **argv);

#endif
