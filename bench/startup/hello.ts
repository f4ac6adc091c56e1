// The floor of the start-up benchmark: the smallest TypeScript program tsx can run.
const greeting: string = "hello";
process.stdout.write(`${greeting}\n`);
