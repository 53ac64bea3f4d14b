/**
 * The one place that loads kafkajs at run time. Import kafkajs values from here, never from
 * 'kafkajs' directly (types may come from 'kafkajs'): this module first replaces kafkajs's
 * aborted-transaction filter with a correct one (see aborted-transactions.ts), which only works
 * if it happens before kafkajs loads its consumer.
 */
import { createRequire } from 'node:module';
import type * as KafkaJs from 'kafkajs';
import { filterAbortedRecords, type AbortedTransaction, type FetchedRecord } from './aborted-transactions.ts';

const require = createRequire(import.meta.url);
const filterModule = require.resolve('kafkajs/src/consumer/filterAbortedMessages.js');
require(filterModule);
const cached = require.cache[filterModule];
if (cached === undefined) throw new Error('kafkajs: cannot patch filterAbortedMessages');
cached.exports = ({ messages, abortedTransactions }: { messages: FetchedRecord[]; abortedTransactions?: AbortedTransaction[] }) =>
  filterAbortedRecords(messages, abortedTransactions);

const kafkajs = require('kafkajs') as typeof KafkaJs;

export default kafkajs;
export const { Kafka, logLevel, AssignerProtocol, PartitionAssigners } = kafkajs;
