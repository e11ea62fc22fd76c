// attack: infinite loop after an await
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    await null;
    for (;;) {}
  } } },
});
