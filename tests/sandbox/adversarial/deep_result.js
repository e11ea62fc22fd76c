// attack: result nested 100000 deep
// phase: producer
// expect: limit_exceeded:stack|value_depth
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    let v = 0;
    for (let i = 0; i < 100000; i++) v = [v];
    return v;
  } } },
});
